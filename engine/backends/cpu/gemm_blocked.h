// The BLIS-style blocking shared by the SIMD kernels: B is packed into kc x NR panels that stay
// in L1 while A's MR x kc panels stream past them from L2; a micro-kernel holds one MR x NR tile
// of C in registers. Each kernel translation unit includes this and instantiates it for its own
// tile, so the packing and edge handling are compiled once per instruction set.
//
// Everything here has internal linkage on purpose: an inline or template function with external
// linkage, compiled in the AVX-512 unit, could be the copy the linker keeps for the whole program
// and then run on a CPU without AVX-512.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/gemm_kernels.h"

namespace shardlab::backends::cpu {
namespace {

// The epilogue as a separate pass, for the Eigen path and for edge tiles. Its operations (one add,
// then comparisons) are exact, so applying them here or in a micro-kernel's store gives the same bits.
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

// Packs op(A)[i0:i0+mc, p0:p0+kc] into MR-row panels (k-major), zero-padding the last one.
// Reads always run along memory: rows of a power-of-two stride would all fall in one cache set.
template <int64_t MR>
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

#if defined(__AVX2__)
// dst[q * ldd + r] = src[r * lds + q] for an 8 x 8 block.
inline void transpose8x8(const float* src, int64_t lds, float* dst, int64_t ldd) {
  __m256 r[8], t[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(src + i * lds);
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    r[i] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(dst + i * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
    _mm256_storeu_ps(dst + (i + 4) * ldd, _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
  }
}
#endif

// Packs op(B)[p0:p0+kc, j0:j0+nc] into NR-column panels (k-major), zero-padding the last one.
template <int64_t NR>
void pack_b(bool tb, const float* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  if (!tb) {
    // Row by row across the panels, so each row of B is read along memory.
    for (int64_t p = 0; p < kc; ++p) {
      const float* src = b + (p0 + p) * ldb + j0;
      for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t cols = std::min(NR, nc - jr);
        float* dst = out + jr * kc + p * NR;
        for (int64_t col = 0; col < cols; ++col) dst[col] = src[jr + col];
        for (int64_t col = cols; col < NR; ++col) dst[col] = 0.f;
      }
    }
    return;
  }
  for (int64_t jr = 0; jr < nc; jr += NR, out += NR * kc) {
    const int64_t cols = std::min(NR, nc - jr);
#if defined(__AVX2__)
    // A full panel goes 8 x 8 at a time through registers: B's rows are read along memory and the
    // panel's rows written whole, where element-wise copying stores one float per instruction.
    if constexpr (NR % 8 == 0)
      if (cols == NR) {
        const int64_t k8 = kc / 8 * 8;
        for (int64_t c0 = 0; c0 < NR; c0 += 8)
          for (int64_t p = 0; p < k8; p += 8) transpose8x8(b + (j0 + jr + c0) * ldb + p0 + p, ldb, out + p * NR + c0, NR);
        for (int64_t col = 0; col < NR; ++col) {
          const float* src = b + (j0 + jr + col) * ldb + p0;
          for (int64_t p = k8; p < kc; ++p) out[p * NR + col] = src[p];
        }
        continue;
      }
#endif
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
  }
}

// K::tile<rows> for a run-time row count of at most K::mr: the last row block of C computes only
// its own rows rather than a full tile into a buffer.
template <class K, int R = int(K::mr)>
void tile_rows(int64_t rows, int64_t kc, const float* ap, const float* bp, float* c, int64_t ldc, bool accumulate,
               const Epilogue<float>* e) {
  if constexpr (R > 1)
    if (rows < R) return tile_rows<K, R - 1>(rows, kc, ap, bp, c, ldc, accumulate, e);
  K::template tile<R>(kc, ap, bp, c, ldc, accumulate, e);
}

// Columns [j0, j0 + nc) of C through micro-kernel K, which provides mr, nr, kc, mc and
//   tile(kc, ap, bp, c, ldc, accumulate, epilogue): C[0:mr, 0:nr] (+)= Ap * Bp, then *epilogue
//   (already offset to the tile) when it is not null.
template <class K>
void blocked_columns(const GemmProblem& g, int64_t j0, int64_t nc, float* apack, float* bpack) {
  constexpr int64_t MR = K::mr, NR = K::nr, KC = K::kc, MC = K::mc;
  constexpr int64_t kGroupNN = std::max<int64_t>(1, 64 / NR) * NR;  // columns packed together from an untransposed B
  alignas(64) float edge[MR * NR];
  const Epilogue<float>& e = g.epilogue;
  for (int64_t p0 = 0; p0 < g.k; p0 += KC) {
    const int64_t kc = std::min(KC, g.k - p0);
    const bool accumulate = p0 > 0, last = p0 + kc >= g.k;
    for (int64_t i0 = 0; i0 < g.m; i0 += MC) {
      const int64_t mc = std::min(MC, g.m - i0);
      pack_a<MR>(g.trans_a, g.a, g.lda, i0, mc, p0, kc, apack);
      for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t cols = std::min(NR, nc - jr);
        float* bp = bpack + jr * kc;
        // Each B panel is packed just before its first use, while it is still in L1: packing the
        // whole slice first sends it (kc x nc floats, often larger than L2) out to L3 and back.
        // Untransposed B is packed a few panels at a time, so that each of its kc rows is read
        // 256 bytes along memory rather than one line per row and panel (a 64-row product, one
        // device's share of a data-parallel batch, ran 40 -> 55-64 GFLOP/s on one AVX2 core).
        if (i0 == 0 && g.trans_b) pack_b<NR>(true, g.b, g.ldb, p0, kc, j0 + jr, cols, bp);
        if (i0 == 0 && !g.trans_b && jr % kGroupNN == 0)
          pack_b<NR>(false, g.b, g.ldb, p0, kc, j0 + jr, std::min(kGroupNN, nc - jr), bp);
        for (int64_t ir = 0; ir < mc; ir += MR) {
          const int64_t rows = std::min(MR, mc - ir);
          const float* ap = apack + ir * kc;
          float* ct = g.c + (i0 + ir) * g.ldc + j0 + jr;
          if (cols == NR) {
            Epilogue<float> tile = e;
            if (tile.bias) tile.bias += j0 + jr;
            if (tile.mask) tile.mask += (i0 + ir) * g.ldc + j0 + jr;
            tile_rows<K>(rows, kc, ap, bp, ct, g.ldc, accumulate, last && !e.empty() ? &tile : nullptr);
            continue;
          }
          // A tile narrower than NR: compute the full tile into a buffer, then add or copy its valid part.
          K::tile(kc, ap, bp, edge, NR, false, nullptr);
          for (int64_t r = 0; r < rows; ++r)
            for (int64_t col = 0; col < cols; ++col)
              ct[r * g.ldc + col] = accumulate ? ct[r * g.ldc + col] + edge[r * NR + col] : edge[r * NR + col];
          if (last) apply_epilogue(e, rows, cols, i0 + ir, j0 + jr, g.c, g.ldc);
        }
      }
    }
  }
}

}  // namespace
}  // namespace shardlab::backends::cpu
