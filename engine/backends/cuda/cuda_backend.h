// The CUDA backend: the virtual devices of a mesh on one GPU (GPU 0), each with its own arena,
// stream and host thread, exchanging data through PeerCollectives. Over several processes
// (BackendOptions::processes) each of a process's devices has a GPU of its own instead, and NCCL
// connects them (nccl_collectives.h). Float32 only. Written and built without a GPU: it has not
// run yet (see README, "CUDA").
#pragma once

#include <memory>

#include "engine/backends/backend.h"

namespace shardlab::backends::cuda {

// Throws Error "no CUDA GPU found: <the CUDA runtime's reason>" where there is none.
std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace shardlab::backends::cuda
