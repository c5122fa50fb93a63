// Float32 GEMMs on one GPU through cuBLASLt, row-major like the CPU's gemm (cpu/gemm.h): C = op(A)
// @ op(B), optionally with the bias (+ ReLU) epilogue of an ir::EpilogueChain in the same pass.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>

namespace shardlab::backends::cuda {

class LtGemm {
 public:
  LtGemm();  // on the calling thread's current device
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // A is M x K (K x M when trans_a), B is K x N (N x K when trans_b), C is M x N; row-major with
  // leading dimensions. `bias` (N floats, added to every row) and `relu` select the epilogue.
  // Returns false, running nothing, where cuBLASLt offers no algorithm for that epilogue on these
  // operands (the caller then runs the plain GEMM and its own kernels); throws Error where it has
  // none for the plain GEMM either.
  bool run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float* c, int64_t ldc, const float* bias, bool relu, cudaStream_t stream);

 private:
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

}  // namespace shardlab::backends::cuda
