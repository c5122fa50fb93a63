// Single-precision GEMM for the CPU backend: C = op(A) @ op(B), all row-major.
#pragma once

#include <cstdint>
#include <vector>

namespace shardlab::backends::cpu {

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
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float* c, int64_t ldc, const Epilogue<float>& epilogue = {});
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double* c, int64_t ldc, const Epilogue<double>& epilogue = {});

// The float GEMM implementations. The SIMD kernels live in their own translation units, compiled
// for their instruction set; the rest of the engine is built for x86-64-v3.
enum class GemmKernel { avx512, avx2, eigen };

// The kernels this CPU can run, fastest first; eigen is always there and always last.
std::vector<GemmKernel> available_kernels();
// "avx512 12x32", "avx2 6x16" or "eigen".
const char* kernel_name(GemmKernel kernel);
// gemm() on a chosen kernel, for tests and benchmarks; throws shardlab::Error when the CPU cannot
// run it.
void gemm_with(GemmKernel kernel, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a,
               int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc, const Epilogue<float>& epilogue = {});

// The kernel float GEMMs use on this machine: kernel_name(available_kernels().front()).
const char* gemm_kind();

}  // namespace shardlab::backends::cpu
