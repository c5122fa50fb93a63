// NCCL's entry points, loaded on first use rather than linked (as cuBLASLt's, cublaslt_library.h):
// libnccl is over 200 MB and only runs over several processes need it, so a one-process CUDA run
// neither loads it nor needs it installed.
#pragma once

#include <nccl.h>

#include <string>

namespace shardlab::backends::cuda {

struct NcclLibrary {
  int version = 0;  // ncclGetVersion's: 22809 for 2.28.9
  decltype(&ncclGetVersion) get_version;
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRankConfig) comm_init_rank_config;
  decltype(&ncclCommFinalize) comm_finalize;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclCommAbort) comm_abort;
  decltype(&ncclCommGetAsyncError) comm_get_async_error;
  decltype(&ncclGetErrorString) error_string;
  decltype(&ncclGetLastError) last_error;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclAllGather) all_gather;
  decltype(&ncclReduceScatter) reduce_scatter;
  decltype(&ncclBroadcast) broadcast;
  decltype(&ncclSend) send;
  decltype(&ncclRecv) recv;
};

// libnccl.so.2 from the loader's path, else the library the build found, loaded once; throws Error
// naming it and the loader's reason where it cannot be loaded or is older than 2.14 (non-blocking
// communicators, which abort() needs).
const NcclLibrary& nccl();

// "NCCL: <what>: <NCCL's name for the status> (<its last error on comm>)", for an Error.
std::string nccl_message(ncclResult_t status, const std::string& what, ncclComm_t comm = nullptr);

}  // namespace shardlab::backends::cuda
