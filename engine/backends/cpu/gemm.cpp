// Float GEMM with an AVX-512 micro-kernel in the BLIS layout: B is packed into KC x NR panels that
// stay in L1 while A's MR x KC panels stream past them from L2. On a Zen 4 core this runs about
// 25% faster than Eigen's general product, which is what the training step spends its time in.
// Builds without AVX-512 (and all double GEMMs, used by the tests) go through Eigen.
#include "engine/backends/cpu/gemm.h"

#include <Eigen/Core>
#include <algorithm>
#include <omp.h>
#include <vector>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace shardlab::backends::cpu {

namespace {

template <class T>
void eigen_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                T* c, int64_t ldc) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<const Mat, 0, Stride> A(a, ta ? k : m, ta ? m : k, Stride(lda));
  Eigen::Map<const Mat, 0, Stride> B(b, tb ? n : k, tb ? k : n, Stride(ldb));
  Eigen::Map<Mat, 0, Stride> C(c, m, n, Stride(ldc));
  if (!ta && !tb) C.noalias() = A * B;
  else if (ta && !tb) C.noalias() = A.transpose() * B;
  else if (!ta) C.noalias() = A * B.transpose();
  else C.noalias() = A.transpose() * B.transpose();
}

// The epilogue as a separate pass, for the Eigen path and for edge tiles.
template <class T>
void apply_epilogue(const Epilogue<T>& e, int64_t rows, int64_t cols, int64_t i0, int64_t j0, T* c, int64_t ldc) {
  if (e.empty()) return;
  for (int64_t r = 0; r < rows; ++r) {
    T* row = c + (i0 + r) * ldc + j0;
    const T* mask = e.mask ? e.mask + (i0 + r) * ldc + j0 : nullptr;
    for (int64_t col = 0; col < cols; ++col) {
      T v = row[col];
      if (e.bias) v += e.bias[j0 + col];
      if (e.relu) v = v > T(0) ? v : T(0);
      if (mask) v = mask[col] > T(0) ? v : T(0);
      row[col] = v;
    }
  }
}

#if defined(__AVX512F__)

constexpr int64_t MR = 12, NR = 32;  // 24 zmm accumulators, 2 for B, 1 for A's broadcast
// Depth of one pass: C tiles are re-read once per KC, so deeper is better while an A block
// (MC x KC = 480 KiB) and a B panel (KC x NR = 64 KiB) stay in L2; both stream at well under
// L2 bandwidth for 24 FMAs per k.
constexpr int64_t KC = 512;
constexpr int64_t MC = 240;

// C[0:MR, 0:NR] (+)= Ap (KC x MR, k-major) * Bp (KC x NR, k-major), then the epilogue when
// `last` (bias and mask pointers are already offset to this tile).
void micro_kernel(int64_t kc, const float* __restrict ap, const float* __restrict bp, float* c, int64_t ldc,
                  bool accumulate, bool last = false, const Epilogue<float>& e = {}) {
  __m512 acc[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_load_ps(bp), b1 = _mm512_load_ps(bp + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(ap[r]);
      acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
    }
    ap += MR;
    bp += NR;
  }
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) {
    float* row = c + r * ldc;
    if (accumulate) {
      acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(row));
      acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(row + 16));
    }
    if (last) {
      if (e.bias) {
        acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(e.bias));
        acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(e.bias + 16));
      }
      if (e.relu) {
        acc[r][0] = _mm512_max_ps(acc[r][0], _mm512_setzero_ps());
        acc[r][1] = _mm512_max_ps(acc[r][1], _mm512_setzero_ps());
      }
      if (e.mask) {
        const float* m = e.mask + r * ldc;
        acc[r][0] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(m), _mm512_setzero_ps(), _CMP_GT_OQ), acc[r][0]);
        acc[r][1] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(m + 16), _mm512_setzero_ps(), _CMP_GT_OQ), acc[r][1]);
      }
    }
    _mm512_storeu_ps(row, acc[r][0]);
    _mm512_storeu_ps(row + 16, acc[r][1]);
  }
}

// Packs op(A)[i0:i0+mc, p0:p0+kc] into MR-row panels, zero-padding the last one.
// Reads always run along memory: rows of a power-of-two stride would all fall in one cache set.
void pack_a(bool ta, const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * kc) {
    const int64_t rows = std::min(MR, mc - ir);
    if (ta) {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = a + (p0 + p) * lda + i0 + ir;
        for (int64_t r = 0; r < rows; ++r) out[p * MR + r] = src[r];
        for (int64_t r = rows; r < MR; ++r) out[p * MR + r] = 0.f;
      }
    } else {
      for (int64_t r = 0; r < MR; ++r) {
        const float* src = a + (i0 + ir + r) * lda + p0;
        if (r < rows)
          for (int64_t p = 0; p < kc; ++p) out[p * MR + r] = src[p];
        else
          for (int64_t p = 0; p < kc; ++p) out[p * MR + r] = 0.f;
      }
    }
  }
}

// Packs op(B)[p0:p0+kc, j0:j0+nc] into NR-column panels, zero-padding the last one.
void pack_b(bool tb, const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  for (int64_t jr = 0; jr < nc; jr += NR, out += NR * kc) {
    const int64_t cols = std::min(NR, nc - jr);
    if (tb) {
      // In chunks of 64 k, so the panel being written (64 x NR floats) stays in L1.
      for (int64_t pb = 0; pb < kc; pb += 64) {
        const int64_t pe = std::min(kc, pb + 64);
        for (int64_t col = 0; col < NR; ++col) {
          const float* src = b + (j0 + jr + col) * ldb + p0;
          if (col < cols)
            for (int64_t p = pb; p < pe; ++p) out[p * NR + col] = src[p];
          else
            for (int64_t p = pb; p < pe; ++p) out[p * NR + col] = 0.f;
        }
      }
    } else {
      for (int64_t p = 0; p < kc; ++p) {
        const float* src = b + (p0 + p) * ldb + j0 + jr;
        std::copy(src, src + cols, out + p * NR);
        std::fill(out + p * NR + cols, out + (p + 1) * NR, 0.f);
      }
    }
  }
}

// One thread's share: columns [j0, j0 + nc) of C.
void gemm_columns(bool ta, bool tb, int64_t m, int64_t j0, int64_t nc, int64_t k, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float* c, int64_t ldc, const Epilogue<float>& e) {
  thread_local std::vector<float, Eigen::aligned_allocator<float>> apack, bpack;
  const int64_t nc_padded = (nc + NR - 1) / NR * NR;
  bpack.resize(size_t(KC * nc_padded));
  apack.resize(size_t(KC * MC));
  alignas(64) float edge[MR * NR];
  for (int64_t p0 = 0; p0 < k; p0 += KC) {
    const int64_t kc = std::min(KC, k - p0);
    const bool accumulate = p0 > 0, last = p0 + kc >= k;
    pack_b(tb, b, ldb, p0, kc, j0, nc, bpack.data());
    for (int64_t i0 = 0; i0 < m; i0 += MC) {
      const int64_t mc = std::min(MC, m - i0);
      pack_a(ta, a, lda, i0, mc, p0, kc, apack.data());
      for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t cols = std::min(NR, nc - jr);
        const float* bp = bpack.data() + jr * kc;
        for (int64_t ir = 0; ir < mc; ir += MR) {
          const int64_t rows = std::min(MR, mc - ir);
          const float* ap = apack.data() + ir * kc;
          float* ct = c + (i0 + ir) * ldc + j0 + jr;
          if (rows == MR && cols == NR) {
            Epilogue<float> tile = e;
            if (tile.bias) tile.bias += j0 + jr;
            if (tile.mask) tile.mask += (i0 + ir) * ldc + j0 + jr;
            micro_kernel(kc, ap, bp, ct, ldc, accumulate, last, tile);
            continue;
          }
          // Edge tile: compute the full tile into a buffer, then add or copy its valid part.
          micro_kernel(kc, ap, bp, edge, NR, false);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t col = 0; col < cols; ++col)
              ct[r * ldc + col] = accumulate ? ct[r * ldc + col] + edge[r * NR + col] : edge[r * NR + col];
          if (last) apply_epilogue(e, rows, cols, i0 + ir, j0 + jr, c, ldc);
        }
      }
    }
  }
}

#endif

}  // namespace

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
          float* c, int64_t ldc, const Epilogue<float>& e) {
#if defined(__AVX512F__)
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.f);
    apply_epilogue(e, m, n, 0, 0, c, ldc);
    return;
  }
  // Split the columns into NR-aligned slices, one per thread; small products stay on one thread.
  const int threads = std::max(1, std::min<int>(omp_get_max_threads(), int((n + NR - 1) / NR)));
  const bool parallel = threads > 1 && double(m) * double(n) * double(k) >= 1e6;
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t panels = (n + NR - 1) / NR;
    const int64_t first = panels * t / nt, last = panels * (t + 1) / nt;
    const int64_t j0 = first * NR, j1 = std::min(n, last * NR);
    if (j1 > j0) gemm_columns(ta, tb, m, j0, j1 - j0, k, a, lda, b, ldb, c, ldc, e);
  }
#else
  eigen_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
  apply_epilogue(e, m, n, 0, 0, c, ldc);
#endif
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda, const double* b, int64_t ldb,
          double* c, int64_t ldc, const Epilogue<double>& e) {
  eigen_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
  apply_epilogue(e, m, n, 0, 0, c, ldc);
}

const char* gemm_kind() {
#if defined(__AVX512F__)
  return "avx512 12x32";
#else
  return "eigen";
#endif
}

}  // namespace shardlab::backends::cpu
