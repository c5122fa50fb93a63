#include "engine/api/build_info.h"

#include <algorithm>

#include "engine/backends/backend.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/export/onnx_export.h"

#ifndef SHARDLAB_VERSION
#error "engine/CMakeLists.txt defines SHARDLAB_VERSION for this file"
#endif
#ifndef SHARDLAB_CPU_TARGET
#error "engine/CMakeLists.txt defines SHARDLAB_CPU_TARGET for this file"
#endif

namespace shardlab::api {

BuildInfo build_info() {
  BuildInfo info;
  info.version = SHARDLAB_VERSION;
  const std::vector<std::string> backends = backends::built_backends();
  info.cuda = std::find(backends.begin(), backends.end(), "cuda") != backends.end();
#if SHARDLAB_BUILD_HAS_MPI
  info.mpi = true;  // shardlab-cli runs over several processes under mpirun or srun
#else
  info.mpi = false;
#endif
  info.onnx = exporter::onnx_available();
  info.cpu_target = SHARDLAB_CPU_TARGET;
  info.gemm_kernel = backends::cpu::gemm_kind();
  return info;
}

std::string build_info_text() {
  const BuildInfo b = build_info();
  auto yes_no = [](bool on) { return on ? "yes" : "no"; };
  return "Shardlab " + b.version + "\n" +                                                               //
         "built with: CUDA " + yes_no(b.cuda) + ", MPI " + yes_no(b.mpi) + ", ONNX " + yes_no(b.onnx) + "\n" +  //
         "CPU code path: " + b.cpu_target + " build, " + b.gemm_kernel + " GEMM kernel (picked at run time)\n";
}

}  // namespace shardlab::api
