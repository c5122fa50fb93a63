#include "engine/util/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

#include "engine/util/error.h"

namespace shardlab::util {

void write_file_atomically(const std::filesystem::path& file, std::string_view bytes) {
  write_file_atomically(file, std::vector<std::string_view>{bytes});
}

void write_file_atomically(const std::filesystem::path& file, const std::vector<std::string_view>& pieces) {
  write_file_atomically(file, [&](const ByteSink& sink) {
    for (std::string_view bytes : pieces) sink(bytes);
  });
}

void write_file_atomically(const std::filesystem::path& file, const std::function<void(const ByteSink&)>& produce) {
  // A name of its own per write, so two saves of one file never share a temporary.
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = file;
  tmp += ".saving-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(file.string() + ": cannot write (" + tmp.string() + ": " + std::strerror(errno) + ")");
  bool closed = false;
  auto fail = [&](const std::string& why) {
    closed = true;
    ::close(fd);
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(file.string() + ": " + why + "; the previous file is untouched");
  };
  const ByteSink sink = [&](std::string_view bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail(std::string("writing failed (") + std::strerror(errno) + ")");
      done += size_t(n);
    }
  };
  try {
    produce(sink);
  } catch (...) {
    // What the producer could not make leaves no file: the temporary goes, the error stays its own.
    if (!closed) {
      ::close(fd);
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
    }
    throw;
  }
  if (::fsync(fd) != 0) fail(std::string("flushing to disk failed (") + std::strerror(errno) + ")");
  ::close(fd);
  std::error_code ec;
  std::filesystem::rename(tmp, file, ec);
  if (ec) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(file.string() + ": could not replace the file: " + ec.message());
  }
  // Make the rename itself durable.
  const std::filesystem::path dir = file.has_parent_path() ? file.parent_path() : std::filesystem::path(".");
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace shardlab::util
