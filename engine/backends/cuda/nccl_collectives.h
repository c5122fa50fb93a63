// The collectives interface (backends/collectives.h) among the devices of a mesh laid over several
// processes, each mesh device of this process being one GPU of its own: this process holds the
// `local` devices [rank * local, (rank + 1) * local) (backends/processes.h), local device i on
// GPU first_gpu + i (processes that share a machine share its GPUs out). Every call goes through NCCL on the device's stream: all_reduce is ncclAllReduce (sum),
// all_gather ncclAllGather, reduce_scatter ncclReduceScatter, broadcast ncclBroadcast, all_to_all
// grouped ncclSend/ncclRecv, send/recv ncclSend/ncclRecv over the mesh's global communicator, and
// barrier a one-element all_reduce. Float32, float64, bfloat16, float16 and int32 (16-bit sums in
// NCCL's own order and precision).
//
// Communicators are made once, at construction, for every group the mesh can use: for each
// non-empty subset of its axes (in mesh order, subsets as bit masks in increasing order), every
// distinct Mesh::group of 2 or more devices, devices in increasing order. Every process walks that
// list identically. For each group, the process holding its first device calls ncclGetUniqueId
// and Processes::broadcast hands the id to every process (members or not: a broadcast is a
// collective of the whole run), then this process's members of the group join it with
// ncclCommInitRank inside one ncclGroupStart/End, each on its GPU. A group whose devices come in
// another order (axes named out of mesh order) uses its set's communicator, with ranks mapped.
//
// How this transport differs from the contract's other implementations:
// - NCCL does not add in rank order (rings and trees, chosen by size and topology), so results are
//   not bitwise those of one process, nor of the CPU backend: they agree within rounding.
// - Peers that disagree on a call are not detected (NCCL has no header to compare): that is a bug of
//   the program, which hangs until abort() or gives wrong data.
// - Every call returns once its result is in place on the GPU (it polls the stream), so abort()
//   from another thread, or an error NCCL reports (a peer process gone), ends a wait with an Error;
//   abort() then aborts every communicator (ncclCommAbort), and later calls throw.
// - Buffers are device memory of the calling device's GPU; the in-place forms are NCCL's own.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "engine/backends/collectives.h"

namespace shardlab::sharding {
class Mesh;
}

namespace shardlab::backends {
class Processes;
}

namespace shardlab::backends::cuda {

// Throws Error saying why this module cannot run over several processes: built without NCCL, or
// libnccl cannot be loaded here. Returns where it can.
void require_nccl();

// The collectives among `mesh`'s devices over `processes`, this process's local device i (global id
// rank * local + i) running on GPU first_gpu + i with its kernels on streams[i] (local =
// streams.size()). Called by every process at the same point of the program (it meets the others
// to make the communicators). Throws Error where the mesh does not divide among the processes as
// `local` each, or where this process has fewer GPUs than local devices (naming both).
std::unique_ptr<Collectives> make_nccl_collectives(const sharding::Mesh& mesh, Processes& processes,
                                                   std::vector<cudaStream_t> streams, int first_gpu);

}  // namespace shardlab::backends::cuda
