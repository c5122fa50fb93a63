// What this build of Shardlab is and which code it runs here: the version, the optional parts it
// was built with, and the CPU code path picked at run time. `shardlab-cli --version` and the
// desktop application's Help > About both show it.
#pragma once

#include <string>

namespace shardlab::api {

struct BuildInfo {
  std::string version;      // "0.1.0"
  bool cuda = false;        // a CUDA backend was built
  bool mpi = false;         // shardlab-cli of this build runs over several processes (mpirun, srun)
  bool onnx = false;        // ONNX export (libonnx)
  std::string cpu_target;   // the instruction set the build targets: "x86-64-v3"
  std::string gemm_kernel;  // the float GEMM kernel this CPU runs: "avx2 6x16"
};

BuildInfo build_info();

// build_info() as lines of text:
//   Shardlab 0.1.0
//   built with: CUDA no, MPI no, ONNX yes
//   CPU code path: x86-64-v3 build, avx2 6x16 GEMM kernel (picked at run time)
std::string build_info_text();

}  // namespace shardlab::api
