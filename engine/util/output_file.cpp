#include "engine/util/output_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/util/atomic_file.h"
#include "engine/util/error.h"
#include "engine/util/file_kind.h"

namespace shardlab::util {

namespace fs = std::filesystem;

namespace {

// step_ and digits: a step directory's name.
bool step_name(const std::string& n) {
  if (n.rfind("step_", 0) != 0 || n.size() == 5) return false;
  for (size_t i = 5; i < n.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return false;
  return true;
}

bool present(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0;
}

// A checkpoint root: its run.json is Shardlab's (a run.json of another tool's is no sign), or it
// holds the lock file beside step directories (a root written before run.json existed).
bool checkpoint_root(const fs::path& d) {
  if (present(d / kCheckpointMarkers[0])) {
    char head[512] = {};
    const int fd = ::open((d / kCheckpointMarkers[0]).c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      const ssize_t n = ::read(fd, head, sizeof head - 1);
      ::close(fd);
      if (n > 0 && std::strstr(head, "shardlab.run")) return true;
    }
  }
  if (!present(d / kCheckpointMarkers[1])) return false;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(d, ec))
    if (step_name(e.path().filename().string())) return true;
  return false;
}

// A step directory: named step_N and holding checkpoint.json or COMMITTED, or inside a root.
bool step_directory(const fs::path& d) {
  if (!step_name(d.filename().string())) return false;
  return present(d / kCheckpointMarkers[2]) || present(d / kCheckpointMarkers[3]) || checkpoint_root(d.parent_path());
}

// The step directory `dir` is or lies in, or "".
std::string step_around(const fs::path& dir) {
  for (fs::path d = dir;; d = d.parent_path()) {
    if (step_directory(d)) return d.string();
    if (d == d.root_path() || d.empty()) return "";
  }
}

// A name the checkpoint writer uses in a root: its markers, and step_ (steps, saves under way).
bool root_name(const std::string& n) {
  return n == kCheckpointMarkers[0] || n == kCheckpointMarkers[1] || n.rfind("step_", 0) == 0;
}

}  // namespace

fs::path output_path(const fs::path& path, const std::string& what) {
  const std::string who = what + " " + path.string() + ": ";
  if (path.empty()) throw Error(what + ": no file given");
  const fs::path& target = path;
  struct stat st {};
  if (::lstat(target.c_str(), &st) == 0) {
    // A link is not followed: what it leads to may be anything, a checkpoint's file among them.
    if (S_ISLNK(st.st_mode))
      throw Error(who + "is a symbolic link; give the path of the file itself, or a new name");
    if (!S_ISREG(st.st_mode))
      throw Error(who + "is " + file_kind(st.st_mode) + "; only a regular file or a new name is written, never one of these");
  } else if (errno != ENOENT) {
    throw Error(who + "cannot check the path (" + std::strerror(errno) + ")");
  }
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) throw Error(who + "its directory " + parent.string() + " does not exist");
  const fs::path real_parent = fs::canonical(parent, ec);
  if (ec) throw Error(who + "cannot resolve its directory " + parent.string() + " (" + ec.message() + ")");
  if (const std::string step = step_around(real_parent); !step.empty())
    throw Error(who + "lies in the checkpoint directory " + step + ", which only the checkpoint writer writes; write it elsewhere");
  if (checkpoint_root(real_parent) && root_name(target.filename().string()))
    throw Error(who + "is a name the checkpoint writer uses in the checkpoint directory " + real_parent.string() +
                " (run.json, .lock, step_...); write it elsewhere, or under another name");
  return real_parent / target.filename();
}

void write_output_file(const fs::path& path, std::string_view bytes, const std::string& what) {
  write_file_atomically(output_path(path, what), bytes);
}

LineFile::LineFile(const fs::path& path, const std::string& what) : name_(path.string()) {
  const fs::path target = output_path(path, what);
  // O_NOFOLLOW: a link put in place since the check is refused, not followed.
  fd_ = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error(what + " " + name_ + ": cannot open for writing (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw Error(what + " " + name_ + ": is not a regular file; not written");
  }
}

LineFile::~LineFile() {
  if (fd_ >= 0) ::close(fd_);
}

void LineFile::write_line(std::string_view line) {
  std::string text(line);
  text += '\n';
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = n < 0 ? std::strerror(errno) : "nothing was written";
      // Cut back to the last whole line, so a reader never takes half a record for a record.
      if (::ftruncate(fd_, off_t(size_)) != 0 || ::lseek(fd_, off_t(size_), SEEK_SET) < 0) {
      }
      throw Error(name_ + ": writing failed (" + why + ")");
    }
    done += size_t(n);
  }
  size_ += text.size();
}

}  // namespace shardlab::util
