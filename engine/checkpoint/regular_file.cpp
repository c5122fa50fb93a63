#include "engine/checkpoint/regular_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/util/error.h"
#include "engine/util/file_kind.h"

namespace shardlab::checkpoint {

RegularFile::RegularFile(const std::filesystem::path& path) : name_(path.string()) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever, before fstat could say
  // what it is. It changes nothing for regular files.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd_ < 0) throw Error(name_ + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw Error(name_ + ": cannot stat (" + std::strerror(err) + ")");
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    const std::string kind = util::file_kind(st.st_mode);
    throw Error(name_ + ": is " + kind + (kind.rfind("not", 0) == 0 ? "" : ", not a regular file") +
                "; only regular files are read");
  }
  size_ = uint64_t(st.st_size);
}

RegularFile::~RegularFile() {
  if (fd_ >= 0) ::close(fd_);
}

void RegularFile::read_at(uint64_t offset, void* dst, uint64_t n) const {
  auto* p = static_cast<char*>(dst);
  uint64_t done = 0;
  while (done < n) {
    const size_t chunk = size_t(std::min<uint64_t>(n - done, uint64_t(1) << 30));
    const ssize_t got = ::pread(fd_, p + done, chunk, off_t(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(name_ + ": reading failed at byte " + std::to_string(offset + done) + " (" + std::strerror(errno) + ")");
    if (got == 0)
      throw Error(name_ + ": ends at byte " + std::to_string(offset + done) + ", before the " + std::to_string(n) +
                  " bytes at offset " + std::to_string(offset) + " (the file shrank while being read?)");
    done += uint64_t(got);
  }
}

std::string read_small_file(const std::filesystem::path& path, uint64_t max_bytes) {
  const RegularFile f(path);
  if (f.size() > max_bytes)
    throw Error(f.name() + ": is " + std::to_string(f.size()) + " bytes, over the limit of " + std::to_string(max_bytes) +
                " for this file");
  std::string s(size_t(f.size()), '\0');
  f.read_at(0, s.data(), s.size());
  return s;
}

}  // namespace shardlab::checkpoint
