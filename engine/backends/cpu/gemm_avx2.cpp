// The AVX2 + FMA float GEMM micro-kernel: a 6 x 16 tile of C in 12 ymm accumulators, two ymm of B
// and one broadcast of A per k (15 of the 16 registers). 12 independent FMAs per k cover the two
// FMA pipes' 4-cycle latency. Compiled with the engine's x86-64-v3 baseline.
#include "engine/backends/cpu/gemm_blocked.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace shardlab::backends::cpu {
namespace {

struct Avx2Tile {
  static constexpr int64_t mr = 6, nr = 16;
  // A 256-deep B panel (16 KiB) sits in L1 beside the A panel streaming past it; the 144 x 256
  // A block (144 KiB) stays in L2. Deeper kc re-reads C less often but spills the B panel.
  static constexpr int64_t kc = 256, mc = 144;

  // R < mr computes only the first R rows of the tile (the last row block of C).
  template <int R = mr>
  static void tile(int64_t kc, const float* __restrict ap, const float* __restrict bp, float* c, int64_t ldc,
                   bool accumulate, const Epilogue<float>* e) {
    // C's rows lie ldc apart, a stride no hardware prefetcher follows: fetch the tile now so it has
    // arrived by the store, kc FMAs later.
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + nr - 1), _MM_HINT_T0);
    }
    __m256 acc[R][2];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t p = 0; p < kc; ++p) {
      const __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        const __m256 av = _mm256_broadcast_ss(ap + r);
        acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
      }
      ap += mr;
      bp += nr;
    }
    const __m256 zero = _mm256_setzero_ps();
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      float* row = c + r * ldc;
      if (accumulate) {
        acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(row));
        acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(row + 8));
      }
      if (e) {
        if (e->bias) {
          acc[r][0] = _mm256_add_ps(acc[r][0], _mm256_loadu_ps(e->bias));
          acc[r][1] = _mm256_add_ps(acc[r][1], _mm256_loadu_ps(e->bias + 8));
        }
        // max(x, 0) returns its second operand for NaN and for -0, like the scalar x > 0 ? x : 0.
        if (e->relu) {
          acc[r][0] = _mm256_max_ps(acc[r][0], zero);
          acc[r][1] = _mm256_max_ps(acc[r][1], zero);
        }
        if (e->mask) {
          const float* m = e->mask + r * ldc;
          acc[r][0] = _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(m), zero, _CMP_GT_OQ), acc[r][0]);
          acc[r][1] = _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(m + 8), zero, _CMP_GT_OQ), acc[r][1]);
        }
      }
      _mm256_storeu_ps(row, acc[r][0]);
      _mm256_storeu_ps(row + 8, acc[r][1]);
    }
  }
};

const BlockedKernel kAvx2{"avx2 6x16", Avx2Tile::mr, Avx2Tile::nr, Avx2Tile::kc, Avx2Tile::mc,
                          &blocked_columns<Avx2Tile>};

}  // namespace

const BlockedKernel* avx2_kernel() { return &kAvx2; }

}  // namespace shardlab::backends::cpu

#else

namespace shardlab::backends::cpu {
const BlockedKernel* avx2_kernel() { return nullptr; }
}  // namespace shardlab::backends::cpu

#endif
