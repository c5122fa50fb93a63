// GEMMs on one GPU through cuBLASLt, row-major like the CPU's gemm (cpu/gemm.h): C = op(A) @ op(B),
// optionally with the bias (+ ReLU) epilogue of an ir::EpilogueChain in the same pass. Operands are
// float32, or both bfloat16 or both float16; the result float32 or the operands' type; products
// accumulate in float32 whatever the types.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>

#include "engine/tensor/dtype.h"

namespace shardlab::backends::cuda {

// The storage types of a GEMM's matrices (and of its bias, where it has one).
struct GemmTypes {
  DType a = DType::F32, b = DType::F32, c = DType::F32, bias = DType::F32;
};

class LtGemm {
 public:
  // Device memory each LtGemm holds for cuBLASLt's workspace.
  static constexpr size_t kWorkspaceBytes = size_t(32) << 20;

  LtGemm();  // on the calling thread's current device
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // A is M x K (K x M when trans_a), B is K x N (N x K when trans_b), C is M x N; row-major with
  // leading dimensions. `bias` (N floats, added to every row) and `relu` select the epilogue.
  // `precision` picks cuBLAS's compute type for float32 operands: Highest is plain FP32; Tf32, Bf16
  // and F16 let the tensor cores round them to that format, accumulating in FP32. 16-bit operands
  // are multiplied as they are, accumulating in FP32. Leading dimensions and strides are in elements.
  // Returns false, running nothing, where cuBLASLt offers no algorithm for that epilogue on these
  // operands (the caller then runs the plain GEMM and its own kernels); throws Error where it has
  // none for the plain GEMM either.
  bool run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda, const void* b,
           int64_t ldb, void* c, int64_t ldc, const void* bias, bool relu, cudaStream_t stream,
           MatmulPrecision precision = MatmulPrecision::Highest, GemmTypes types = {});
  // `batch` such products (BatchMatMul): the i-th reads a + i * stride_a and b + i * stride_b and
  // writes c + i * stride_c. One plan for all of them, one cuBLASLt call each.
  void run_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                   int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, void* c, int64_t ldc,
                   int64_t stride_c, int64_t batch, cudaStream_t stream, MatmulPrecision precision,
                   GemmTypes types = {});

 public:
  // What cuBLASLt was told about one GEMM configuration, and the algorithm its heuristic chose:
  // made on first use and kept, so a training step's repeated GEMMs skip the descriptor set-up
  // and the heuristic query (host time the GPU would otherwise wait on for small products).
  struct Plan {
    cublasLtMatmulDesc_t op = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool found = false;
  };
  using PlanKey = std::array<int64_t, 17>;

 private:
  bool run_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                   int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, void* c, int64_t ldc,
                   int64_t stride_c, int64_t batch, const void* bias, bool relu, cudaStream_t stream,
                   MatmulPrecision precision, GemmTypes types);

  std::map<PlanKey, Plan> plans_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

}  // namespace shardlab::backends::cuda
