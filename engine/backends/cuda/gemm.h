// Float32 GEMMs on one GPU through cuBLASLt, row-major like the CPU's gemm (cpu/gemm.h): C = op(A)
// @ op(B), optionally with the bias (+ ReLU) epilogue of an ir::EpilogueChain in the same pass.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/tensor/dtype.h"

namespace shardlab::backends::cuda {

class LtGemm {
 public:
  LtGemm();  // on the calling thread's current device
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // A is M x K (K x M when trans_a), B is K x N (N x K when trans_b), C is M x N; row-major with
  // leading dimensions. `bias` (N floats, added to every row) and `relu` select the epilogue.
  // `precision` picks cuBLAS's compute type: Highest is plain FP32; Tf32, Bf16 and F16 let the
  // tensor cores round the float32 operands to that format, accumulating in FP32.
  // Returns false, running nothing, where cuBLASLt offers no algorithm for that epilogue on these
  // operands (the caller then runs the plain GEMM and its own kernels); throws Error where it has
  // none for the plain GEMM either.
  bool run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
           int64_t ldb, float* c, int64_t ldc, const float* bias, bool relu, cudaStream_t stream,
           MatmulPrecision precision = MatmulPrecision::Highest);
  // `batch` such products (BatchMatMul): the i-th reads a + i * stride_a and b + i * stride_b and
  // writes c + i * stride_c (strides in floats). One plan for all of them, one cuBLASLt call each.
  void run_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                   int64_t stride_c, int64_t batch, cudaStream_t stream, MatmulPrecision precision);

 private:
  bool run_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                   int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                   int64_t stride_c, int64_t batch, const float* bias, bool relu, cudaStream_t stream,
                   MatmulPrecision precision);

  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

}  // namespace shardlab::backends::cuda
