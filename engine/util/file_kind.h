// What a path holds when it is not the regular file a reader or writer wanted, for its message.
#pragma once

#include <sys/stat.h>

namespace shardlab::util {

// "a directory", "a FIFO", "a character device", ... from stat's st_mode.
inline const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace shardlab::util
