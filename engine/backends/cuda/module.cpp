// The CUDA backend's module entry points (engine/backends/backend_module.h): the only symbols
// libshardlab_backend_cuda.so exports.
#include "engine/backends/backend_module.h"
#include "engine/backends/cuda/cuda_backend.h"

#define SHARDLAB_MODULE_EXPORT extern "C" __attribute__((visibility("default")))

SHARDLAB_MODULE_EXPORT const char* shardlab_backend_module_build() {
  static const std::string build = shardlab::backends::backend_module_build();
  return build.c_str();
}

SHARDLAB_MODULE_EXPORT shardlab::backends::Backend* shardlab_backend_module_make(
    const shardlab::backends::BackendOptions* options) {
  return shardlab::backends::cuda::make_cuda_backend(*options).release();
}
