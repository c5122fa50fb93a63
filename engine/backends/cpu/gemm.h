// Single-precision GEMM for the CPU backend: C = op(A) @ op(B), all row-major. A and B may be
// float32, bfloat16 or float16: they are converted to float32 as they are packed, and float32 ones
// rounded there as the matmul precision says (TensorFloat-32 or bfloat16 emulation). Products
// accumulate in float32 and C is float32, whatever the operands.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/tensor/dtype.h"

namespace shardlab::backends::cpu {

// An operand as it is stored: its elements' type (F32, BF16, F16; F64 for the double GEMM) and
// leading dimension in elements.
struct GemmOperand {
  const void* data = nullptr;
  DType type = DType::F32;
  int64_t ld = 0;
};

// Elementwise work folded into the GEMM's final store, so the result is written once:
// C = relu(C + bias) in the forward pass, C = (mask > 0) ? C : 0 for relu's gradient.
template <class T>
struct Epilogue {
  const T* bias = nullptr;  // [N], added to every row
  bool relu = false;
  const T* mask = nullptr;  // [M x N] with leading dimension ldc: keep C where mask > 0
  bool empty() const { return !bias && !relu && !mask; }
};

// A is M x K (or K x M when trans_a), B is K x N (or N x K when trans_b), C is M x N; each with
// its own leading dimension. Float GEMMs run on the fastest kernel this CPU supports (chosen once,
// at first use), on the OpenMP threads of the calling thread (omp_get_max_threads()).
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, float* c, int64_t ldc,
          const Epilogue<float>& epilogue = {}, MatmulPrecision precision = MatmulPrecision::Highest);
// The tests' double-precision GEMM (Eigen): F64 operands, or 16-bit ones widened first.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, double* c, int64_t ldc,
          const Epilogue<double>& epilogue = {}, MatmulPrecision precision = MatmulPrecision::Highest);
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc, const Epilogue<float>& epilogue = {}) {
  gemm(trans_a, trans_b, m, n, k, {a, DType::F32, lda}, {b, DType::F32, ldb}, c, ldc, epilogue);
}
inline void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
                 int64_t ldb, double* c, int64_t ldc, const Epilogue<double>& epilogue = {}) {
  gemm(trans_a, trans_b, m, n, k, {a, DType::F64, lda}, {b, DType::F64, ldb}, c, ldc, epilogue);
}

// The float GEMM implementations. The SIMD kernels live in their own translation units, compiled
// for their instruction set; the rest of the engine is built for x86-64-v3.
enum class GemmKernel { avx512, avx2, eigen };

// The kernels this CPU can run, fastest first; eigen is always there and always last.
std::vector<GemmKernel> available_kernels();
// "avx512 12x32", "avx2 6x16" or "eigen".
const char* kernel_name(GemmKernel kernel);
// gemm() on a chosen kernel, for tests and benchmarks; throws shardlab::Error when the CPU cannot
// run it.
void gemm_with(GemmKernel kernel, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b,
               float* c, int64_t ldc, const Epilogue<float>& epilogue = {}, MatmulPrecision precision = MatmulPrecision::Highest);
inline void gemm_with(GemmKernel kernel, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
                      int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, const Epilogue<float>& epilogue = {}) {
  gemm_with(kernel, trans_a, trans_b, m, n, k, {a, DType::F32, lda}, {b, DType::F32, ldb}, c, ldc, epilogue);
}

// The kernel float GEMMs use on this machine: kernel_name(available_kernels().front()).
const char* gemm_kind();

}  // namespace shardlab::backends::cpu
