// A test hook, never part of a shipped binary: an LD_PRELOAD library that ends the process at the
// n-th file-system call that changes something under one directory, as a power cut or a kill -9
// would, so a test can check what every possible interruption of a checkpoint save leaves behind.
//
//   SHARDLAB_FAULT_DIR=/abs/dir  only calls on paths under this directory (and on descriptors
//                                opened there) count
//   SHARDLAB_FAULT_AT=n          the n-th such call (1-based) is not made: the process _exits with
//                                status 86 (no destructors, no flushing, like a kill) instead
//
// Counted: creating, opening for writing, renaming, linking and removing files and directories
// there; write, pwrite, ftruncate, fsync and fdatasync on descriptors opened there (a directory
// opened read-only for its fsync included). Without both variables set, every call passes through.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum { kKilledStatus = 86, kMaxFd = 65536 };

static char g_dir[PATH_MAX];
static size_t g_dir_len;
static long g_fault_at;
static atomic_long g_count;
static atomic_bool g_tracked[kMaxFd];

__attribute__((constructor)) static void init(void) {
  const char* dir = getenv("SHARDLAB_FAULT_DIR");
  const char* at = getenv("SHARDLAB_FAULT_AT");
  if (!dir || !at || dir[0] != '/' || strlen(dir) >= sizeof g_dir) return;
  strcpy(g_dir, dir);
  g_dir_len = strlen(g_dir);
  while (g_dir_len > 1 && g_dir[g_dir_len - 1] == '/') g_dir[--g_dir_len] = '\0';
  g_fault_at = atol(at);
}

// `path` as seen from `dirfd` (AT_FDCWD: the working directory), made absolute textually.
static int under_dir_at(int dirfd, const char* path) {
  if (g_fault_at <= 0 || !path) return 0;
  char full[2 * PATH_MAX];
  if (path[0] == '/') {
    snprintf(full, sizeof full, "%s", path);
  } else {
    char base[PATH_MAX];
    if (dirfd == AT_FDCWD) {
      if (!getcwd(base, sizeof base)) return 0;
    } else {
      char link[64];
      snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
      const ssize_t n = readlink(link, base, sizeof base - 1);
      if (n <= 0) return 0;
      base[n] = '\0';
    }
    snprintf(full, sizeof full, "%s/%s", base, path);
  }
  return strncmp(full, g_dir, g_dir_len) == 0 && (full[g_dir_len] == '/' || full[g_dir_len] == '\0');
}
static int under_dir(const char* path) { return under_dir_at(AT_FDCWD, path); }

static int tracked(int fd) { return g_fault_at > 0 && fd >= 0 && fd < kMaxFd && atomic_load(&g_tracked[fd]); }

static void count_call(void) {
  if (atomic_fetch_add(&g_count, 1) + 1 == g_fault_at) _exit(kKilledStatus);
}

static void* next(const char* name) { return dlsym(RTLD_NEXT, name); }

static int mutating_flags(int flags) { return (flags & (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC)) != 0; }

static int after_open(int fd) {
  if (fd >= 0 && fd < kMaxFd) atomic_store(&g_tracked[fd], 1);
  return fd;
}

static int do_openat(const char* fn, int dirfd, const char* path, int flags, mode_t mode) {
  const int watched = under_dir_at(dirfd, path);
  if (watched && mutating_flags(flags)) count_call();
  int (*real)(int, const char*, int, ...) = next(fn);
  const int fd = real(dirfd, path, flags, mode);
  return watched ? after_open(fd) : fd;
}

static int do_open(const char* fn, const char* path, int flags, mode_t mode) {
  const int watched = under_dir(path);
  if (watched && mutating_flags(flags)) count_call();
  int (*real)(const char*, int, ...) = next(fn);
  const int fd = real(path, flags, mode);
  return watched ? after_open(fd) : fd;
}

#define MODE_ARG(flags)                                              \
  mode_t mode = 0;                                                   \
  if ((flags) & (O_CREAT | __O_TMPFILE)) {                           \
    va_list ap;                                                      \
    va_start(ap, flags);                                             \
    mode = va_arg(ap, mode_t);                                       \
    va_end(ap);                                                      \
  }

int open(const char* path, int flags, ...) {
  MODE_ARG(flags)
  return do_open("open", path, flags, mode);
}
int open64(const char* path, int flags, ...) {
  MODE_ARG(flags)
  return do_open("open64", path, flags, mode);
}
int openat(int dirfd, const char* path, int flags, ...) {
  MODE_ARG(flags)
  return do_openat("openat", dirfd, path, flags, mode);
}
int openat64(int dirfd, const char* path, int flags, ...) {
  MODE_ARG(flags)
  return do_openat("openat64", dirfd, path, flags, mode);
}
int creat(const char* path, mode_t mode) { return open(path, O_CREAT | O_WRONLY | O_TRUNC, mode); }
int creat64(const char* path, mode_t mode) { return open64(path, O_CREAT | O_WRONLY | O_TRUNC, mode); }

int close(int fd) {
  if (fd >= 0 && fd < kMaxFd) atomic_store(&g_tracked[fd], 0);
  int (*real)(int) = next("close");
  return real(fd);
}

#define FD_CALL(ret, name, params, args)   \
  ret name params {                        \
    if (tracked(fd)) count_call();         \
    ret(*real) params = next(#name);       \
    return real args;                      \
  }

FD_CALL(ssize_t, write, (int fd, const void* buf, size_t n), (fd, buf, n))
FD_CALL(ssize_t, pwrite, (int fd, const void* buf, size_t n, off_t off), (fd, buf, n, off))
FD_CALL(ssize_t, pwrite64, (int fd, const void* buf, size_t n, off64_t off), (fd, buf, n, off))
FD_CALL(ssize_t, writev, (int fd, const struct iovec* iov, int cnt), (fd, iov, cnt))
FD_CALL(int, ftruncate, (int fd, off_t len), (fd, len))
FD_CALL(int, ftruncate64, (int fd, off64_t len), (fd, len))
FD_CALL(int, fsync, (int fd), (fd))
FD_CALL(int, fdatasync, (int fd), (fd))

#define PATH_CALL(ret, name, params, test, args) \
  ret name params {                              \
    if (test) count_call();                      \
    ret(*real) params = next(#name);             \
    return real args;                            \
  }

PATH_CALL(int, mkdir, (const char* p, mode_t m), under_dir(p), (p, m))
PATH_CALL(int, mkdirat, (int d, const char* p, mode_t m), under_dir_at(d, p), (d, p, m))
PATH_CALL(int, rmdir, (const char* p), under_dir(p), (p))
PATH_CALL(int, unlink, (const char* p), under_dir(p), (p))
PATH_CALL(int, unlinkat, (int d, const char* p, int f), under_dir_at(d, p), (d, p, f))
PATH_CALL(int, remove, (const char* p), under_dir(p), (p))
PATH_CALL(int, rename, (const char* a, const char* b), under_dir(a) || under_dir(b), (a, b))
PATH_CALL(int, renameat, (int da, const char* a, int db, const char* b), under_dir_at(da, a) || under_dir_at(db, b),
          (da, a, db, b))
PATH_CALL(int, renameat2, (int da, const char* a, int db, const char* b, unsigned f),
          under_dir_at(da, a) || under_dir_at(db, b), (da, a, db, b, f))
PATH_CALL(int, link, (const char* a, const char* b), under_dir(b), (a, b))
PATH_CALL(int, symlink, (const char* a, const char* b), under_dir(b), (a, b))
