#include "engine/backends/cuda/nccl_library.h"

#include <dlfcn.h>

#include <mutex>

#include "engine/util/error.h"

namespace shardlab::backends::cuda {

namespace {

const std::string kName = "libnccl.so." + std::to_string(NCCL_MAJOR);

template <class F>
void resolve(void* lib, F& f, const char* symbol) {
  f = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!f) throw Error(kName + " has no " + symbol + " (an NCCL older than this build's headers?)");
}

std::string version_str(int v) {
  // NCCL_VERSION(X, Y, Z) is X * 10000 + Y * 100 + Z since 2.9.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

NcclLibrary load() {
  // Kept open for the process's life. The loader's path first (LD_LIBRARY_PATH, ld.so.conf), then
  // the library this build was configured with.
  void* lib = dlopen(kName.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::string why = lib ? "" : dlerror();
#ifdef SHARDLAB_NCCL_LIBRARY
  if (!lib) {
    lib = dlopen(SHARDLAB_NCCL_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) why += std::string("; ") + SHARDLAB_NCCL_LIBRARY + ": " + dlerror();
  }
#endif
  if (!lib)
    throw Error("cannot load " + kName + " (NCCL, which runs over several processes need; part of the CUDA toolkit "
                "or the libnccl2 package): " + why);
  NcclLibrary l{};
  resolve(lib, l.get_version, "ncclGetVersion");
  resolve(lib, l.get_unique_id, "ncclGetUniqueId");
  resolve(lib, l.comm_init_rank_config, "ncclCommInitRankConfig");
  resolve(lib, l.comm_finalize, "ncclCommFinalize");
  resolve(lib, l.comm_destroy, "ncclCommDestroy");
  resolve(lib, l.comm_abort, "ncclCommAbort");
  resolve(lib, l.comm_get_async_error, "ncclCommGetAsyncError");
  resolve(lib, l.error_string, "ncclGetErrorString");
  resolve(lib, l.last_error, "ncclGetLastError");
  resolve(lib, l.group_start, "ncclGroupStart");
  resolve(lib, l.group_end, "ncclGroupEnd");
  resolve(lib, l.all_reduce, "ncclAllReduce");
  resolve(lib, l.all_gather, "ncclAllGather");
  resolve(lib, l.reduce_scatter, "ncclReduceScatter");
  resolve(lib, l.broadcast, "ncclBroadcast");
  resolve(lib, l.send, "ncclSend");
  resolve(lib, l.recv, "ncclRecv");
  if (l.get_version(&l.version) != ncclSuccess) throw Error(kName + ": ncclGetVersion failed");
  if (l.version < NCCL_VERSION(2, 14, 0))
    throw Error(kName + " is NCCL " + version_str(l.version) +
                "; runs over several processes need 2.14 or newer (non-blocking communicators, so that a failing "
                "process stops its peers instead of hanging them)");
  return l;
}

}  // namespace

const NcclLibrary& nccl() {
  // A failed load is retried by the next caller (call_once rethrows and stays unset).
  static std::once_flag once;
  static NcclLibrary lib;
  std::call_once(once, [] { lib = load(); });
  return lib;
}

std::string nccl_message(ncclResult_t status, const std::string& what, ncclComm_t comm) {
  const NcclLibrary& l = nccl();
  std::string s = "NCCL: " + what + ": " + l.error_string(status);
  const char* last = l.last_error(comm);
  if (last && *last) s += std::string(" (") + last + ")";
  return s;
}

}  // namespace shardlab::backends::cuda
