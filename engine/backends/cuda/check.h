// CUDA and cuBLASLt status codes as shardlab::Error, naming the call that failed.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <string>

#include "engine/backends/cuda/cublaslt_library.h"
#include "engine/util/error.h"

namespace shardlab::backends::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw Error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(status));
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("cuBLASLt: ") + what + ": " + cublaslt().status_string(status));
}

}  // namespace shardlab::backends::cuda
