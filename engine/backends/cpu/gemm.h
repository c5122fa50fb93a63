// Single-precision GEMM for the CPU backend: C = op(A) @ op(B), all row-major.
#pragma once

#include <cstdint>

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
// its own leading dimension. Runs on the OpenMP threads set by set_threads().
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
          int64_t ldb, float* c, int64_t ldc, const Epilogue<float>& epilogue = {});
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b,
          int64_t ldb, double* c, int64_t ldc, const Epilogue<double>& epilogue = {});

// Which implementation float GEMMs use in this build ("avx512 12x32" or "eigen").
const char* gemm_kind();

}  // namespace shardlab::backends::cpu
