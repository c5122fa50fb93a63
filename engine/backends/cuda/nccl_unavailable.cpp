// The NCCL collectives of a build that found no NCCL (nccl.h and libnccl): CMake builds this file
// instead of nccl_collectives.cpp and nccl_library.cpp, so the CUDA backend refuses runs over
// several processes with the reason and runs one process as before.
#include "engine/backends/cuda/nccl_collectives.h"

#include "engine/util/error.h"

namespace shardlab::backends::cuda {

void require_nccl() {
  throw Error("backend 'cuda': runs over several processes need NCCL, and this CUDA backend was built without it "
              "(nccl.h and libnccl were not found when it was built); rebuild where NCCL is installed (the CUDA "
              "toolkit's, or libnccl-dev), or run one process with the GPU's devices");
}

std::unique_ptr<Collectives> make_nccl_collectives(const sharding::Mesh&, Processes&, std::vector<cudaStream_t>, int) {
  require_nccl();
  return nullptr;
}

}  // namespace shardlab::backends::cuda
