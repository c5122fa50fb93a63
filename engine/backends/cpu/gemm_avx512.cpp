// The AVX-512 float GEMM micro-kernel: a 12 x 32 tile of C in 24 zmm accumulators, two zmm of B and
// one broadcast of A per k. This file alone is compiled with AVX-512 flags (engine/CMakeLists.txt);
// gemm.cpp only calls into it after checking the CPU at run time.
#include "engine/backends/cpu/gemm_blocked.h"

#if defined(__AVX512F__)
#include <immintrin.h>

namespace shardlab::backends::cpu {
namespace {

struct Avx512Tile {
  static constexpr int64_t mr = 12, nr = 32;
  // C tiles are re-read once per kc, so deeper is better while an A block (mc x kc = 480 KiB) and a
  // B panel (kc x nr = 64 KiB) stay in L2; both stream at well under L2 bandwidth for 24 FMAs per k.
  static constexpr int64_t kc = 512, mc = 240;

  // R < mr computes only the first R rows of the tile (the last row block of C).
  template <int R = mr>
  static void tile(int64_t kc, const float* __restrict ap, const float* __restrict bp, float* c, int64_t ldc,
                   bool accumulate, const Epilogue<float>* e) {
    // C's rows lie ldc apart, a stride no hardware prefetcher follows: fetch the tile now so it has
    // arrived by the store, kc FMAs later.
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + nr - 1), _MM_HINT_T0);
    }
    __m512 acc[R][2];
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (int64_t p = 0; p < kc; ++p) {
      const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        const __m512 av = _mm512_set1_ps(ap[r]);
        acc[r][0] = _mm512_fmadd_ps(av, b0, acc[r][0]);
        acc[r][1] = _mm512_fmadd_ps(av, b1, acc[r][1]);
      }
      ap += mr;
      bp += nr;
    }
    const __m512 zero = _mm512_setzero_ps();
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      float* row = c + r * ldc;
      if (accumulate) {
        acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(row));
        acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(row + 16));
      }
      if (e) {
        if (e->bias) {
          acc[r][0] = _mm512_add_ps(acc[r][0], _mm512_loadu_ps(e->bias));
          acc[r][1] = _mm512_add_ps(acc[r][1], _mm512_loadu_ps(e->bias + 16));
        }
        // max(x, 0) returns its second operand for NaN and for -0, like the scalar x > 0 ? x : 0.
        if (e->relu) {
          acc[r][0] = _mm512_max_ps(acc[r][0], zero);
          acc[r][1] = _mm512_max_ps(acc[r][1], zero);
        }
        if (e->mask) {
          const float* m = e->mask + r * ldc;
          acc[r][0] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(m), zero, _CMP_GT_OQ), acc[r][0]);
          acc[r][1] = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(_mm512_loadu_ps(m + 16), zero, _CMP_GT_OQ), acc[r][1]);
        }
      }
      _mm512_storeu_ps(row, acc[r][0]);
      _mm512_storeu_ps(row + 16, acc[r][1]);
    }
  }
};

const BlockedKernel kAvx512{"avx512 12x32", Avx512Tile::mr, Avx512Tile::nr, Avx512Tile::kc, Avx512Tile::mc,
                            &blocked_columns<Avx512Tile>};

}  // namespace

const BlockedKernel* avx512_kernel() { return &kAvx512; }

}  // namespace shardlab::backends::cpu

#else

namespace shardlab::backends::cpu {
const BlockedKernel* avx512_kernel() { return nullptr; }
}  // namespace shardlab::backends::cpu

#endif
