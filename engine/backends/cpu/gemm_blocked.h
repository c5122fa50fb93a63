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

// How packing reads an operand's elements: float32 as they are, or rounded to TensorFloat-32's or
// bfloat16's mantissa (the matmul precision), or 16-bit floats widened. These are this header's own
// (internal linkage, see above) rather than engine/tensor/convert.h's, whose inline functions have
// external linkage; the rounding is the same: to nearest, ties to even.
enum class Read { F32, Tf32, Bf16Round, F16Round, Bf16, F16 };

// Always inlined, so no copy outside a kernel's own functions is compiled for the AVX-512 unit.
[[gnu::always_inline]] inline float keep_mantissa(float x, int bits) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;  // inf and NaN as they are
  const int drop = 23 - bits;
  u = (u + ((1u << (drop - 1)) - 1u) + ((u >> drop) & 1u)) & ~((1u << drop) - 1u);
  __builtin_memcpy(&x, &u, 4);
  return x;
}

template <Read R>
struct Reader {
  using Src = float;
  [[gnu::always_inline]] static float get(float v) {
    if constexpr (R == Read::Tf32) return keep_mantissa(v, 10);
    else if constexpr (R == Read::Bf16Round) return keep_mantissa(v, 7);
#if defined(__F16C__)
    else if constexpr (R == Read::F16Round) return _cvtsh_ss(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
#endif
    else return v;
  }
};
template <>
struct Reader<Read::Bf16> {
  using Src = uint16_t;
  [[gnu::always_inline]] static float get(uint16_t h) {
    const uint32_t u = uint32_t(h) << 16;
    float x;
    __builtin_memcpy(&x, &u, 4);
    return x;
  }
};
template <>
struct Reader<Read::F16> {
  using Src = uint16_t;
  [[gnu::always_inline]] static float get(uint16_t h) {
#if defined(__F16C__)
    return _cvtsh_ss(h);
#else
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
    if (exp == 0) return (sign ? -1.f : 1.f) * float(mant) * 0x1p-24f;
    const uint32_t u = sign | (exp == 31 ? 0x7F800000u | (mant << 13) : ((exp + 112u) << 23) | (mant << 13));
    float x;
    __builtin_memcpy(&x, &u, 4);
    return x;
#endif
  }
};

[[gnu::always_inline]] inline Read read_of(DType t, MatmulPrecision p) {
  if (t == DType::BF16) return Read::Bf16;
  if (t == DType::F16) return Read::F16;
  switch (p) {
    case MatmulPrecision::Tf32: return Read::Tf32;
    case MatmulPrecision::Bf16: return Read::Bf16Round;
    case MatmulPrecision::F16: return Read::F16Round;
    case MatmulPrecision::Highest: break;
  }
  return Read::F32;
}

// Packs op(A)[i0:i0+mc, p0:p0+kc] into MR-row panels (k-major), zero-padding the last one.
// Reads always run along memory: rows of a power-of-two stride would all fall in one cache set.
// Templated on the micro-kernel K (for K::mr) so that every function compiled into a kernel's unit
// is named after it (the package test checks that only those hold AVX-512 code).
template <class K, Read R>
void pack_a(bool ta, const typename Reader<R>::Src* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  using Src = typename Reader<R>::Src;
  constexpr int64_t MR = K::mr;
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * kc) {
    const int64_t rows = std::min(MR, mc - ir);
    if (ta) {
      for (int64_t p = 0; p < kc; ++p) {
        const Src* src = a + (p0 + p) * lda + i0 + ir;
        for (int64_t r = 0; r < rows; ++r) out[p * MR + r] = Reader<R>::get(src[r]);
        for (int64_t r = rows; r < MR; ++r) out[p * MR + r] = 0.f;
      }
    } else {
      for (int64_t r = 0; r < MR; ++r) {
        const Src* src = a + (i0 + ir + r) * lda + p0;
        if (r < rows)
          for (int64_t p = 0; p < kc; ++p) out[p * MR + r] = Reader<R>::get(src[p]);
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
template <class K, Read R>
void pack_b(bool tb, const typename Reader<R>::Src* b, int64_t ldb, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  using Src = typename Reader<R>::Src;
  constexpr int64_t NR = K::nr;
  if (!tb) {
    // Row by row across the panels, so each row of B is read along memory.
    for (int64_t p = 0; p < kc; ++p) {
      const Src* src = b + (p0 + p) * ldb + j0;
      for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t cols = std::min(NR, nc - jr);
        float* dst = out + jr * kc + p * NR;
        for (int64_t col = 0; col < cols; ++col) dst[col] = Reader<R>::get(src[jr + col]);
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
    if constexpr (NR % 8 == 0 && R == Read::F32)
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
        const Src* src = b + (j0 + jr + col) * ldb + p0;
        if (col < cols)
          for (int64_t p = pb; p < pe; ++p) out[p * NR + col] = Reader<R>::get(src[p]);
        else
          for (int64_t p = pb; p < pe; ++p) out[p * NR + col] = 0.f;
      }
    }
  }
}

// The packers for an operand's type and the problem's precision.
template <class K>
void pack_a_of(const GemmProblem& g, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out) {
  const void* a = g.a.data;
  switch (read_of(g.a.type, g.precision)) {
    case Read::F32: return pack_a<K, Read::F32>(g.trans_a, static_cast<const float*>(a), g.a.ld, i0, mc, p0, kc, out);
    case Read::Tf32: return pack_a<K, Read::Tf32>(g.trans_a, static_cast<const float*>(a), g.a.ld, i0, mc, p0, kc, out);
    case Read::Bf16Round: return pack_a<K, Read::Bf16Round>(g.trans_a, static_cast<const float*>(a), g.a.ld, i0, mc, p0, kc, out);
    case Read::F16Round: return pack_a<K, Read::F16Round>(g.trans_a, static_cast<const float*>(a), g.a.ld, i0, mc, p0, kc, out);
    case Read::Bf16: return pack_a<K, Read::Bf16>(g.trans_a, static_cast<const uint16_t*>(a), g.a.ld, i0, mc, p0, kc, out);
    case Read::F16: return pack_a<K, Read::F16>(g.trans_a, static_cast<const uint16_t*>(a), g.a.ld, i0, mc, p0, kc, out);
  }
}
template <class K>
void pack_b_of(const GemmProblem& g, int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out) {
  const void* b = g.b.data;
  switch (read_of(g.b.type, g.precision)) {
    case Read::F32: return pack_b<K, Read::F32>(g.trans_b, static_cast<const float*>(b), g.b.ld, p0, kc, j0, nc, out);
    case Read::Tf32: return pack_b<K, Read::Tf32>(g.trans_b, static_cast<const float*>(b), g.b.ld, p0, kc, j0, nc, out);
    case Read::Bf16Round: return pack_b<K, Read::Bf16Round>(g.trans_b, static_cast<const float*>(b), g.b.ld, p0, kc, j0, nc, out);
    case Read::F16Round: return pack_b<K, Read::F16Round>(g.trans_b, static_cast<const float*>(b), g.b.ld, p0, kc, j0, nc, out);
    case Read::Bf16: return pack_b<K, Read::Bf16>(g.trans_b, static_cast<const uint16_t*>(b), g.b.ld, p0, kc, j0, nc, out);
    case Read::F16: return pack_b<K, Read::F16>(g.trans_b, static_cast<const uint16_t*>(b), g.b.ld, p0, kc, j0, nc, out);
  }
}

// The source lines of the B panel (or group of panels) packed next, fetched into L2 a few at a time
// while the current panel's tiles compute: packing then reads L2 instead of waiting on memory. With
// few rows of A (a 64-row batch, one device's share under data parallelism) each panel feeds only a
// handful of tiles, and packing straight from memory cost an AVX2 core a third of its GEMM rate.
class PanelPrefetch {
 public:
  // `rows` runs of `row_bytes` bytes, `stride` bytes apart, from `base`, over `calls` calls of issue().
  void start(const void* base, int64_t stride, int64_t rows, int64_t row_bytes, int64_t calls) {
    base_ = static_cast<const char*>(base);
    stride_ = stride;
    lines_per_row_ = (row_bytes + 63) / 64;
    total_ = rows * lines_per_row_;
    per_call_ = (total_ + calls - 1) / std::max<int64_t>(calls, 1);
    next_ = 0;
  }
  void issue() {
    for (const int64_t end = std::min(total_, next_ + per_call_); next_ < end; ++next_)
      __builtin_prefetch(base_ + (next_ / lines_per_row_) * stride_ + (next_ % lines_per_row_) * 64, 0, 2);
  }

 private:
  const char* base_ = nullptr;
  int64_t stride_ = 0, lines_per_row_ = 0, total_ = 0, per_call_ = 0, next_ = 0;
};

// Starts `pf` on the source of op(B)[p0:p0+kc, j:j+cols], over `calls` calls.
inline void prefetch_b(PanelPrefetch& pf, const GemmProblem& g, int64_t p0, int64_t kc, int64_t j, int64_t cols, int64_t calls) {
  const int64_t es = int64_t(dtype_size(g.b.type));
  const char* b = static_cast<const char*>(g.b.data);
  if (g.trans_b) pf.start(b + (j * g.b.ld + p0) * es, g.b.ld * es, cols, kc * es, calls);
  else pf.start(b + (p0 * g.b.ld + j) * es, g.b.ld * es, kc, cols * es, calls);
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
      pack_a_of<K>(g, i0, mc, p0, kc, apack);
      PanelPrefetch pf;
      const int64_t tiles = (mc + MR - 1) / MR;
      for (int64_t jr = 0; jr < nc; jr += NR) {
        const int64_t cols = std::min(NR, nc - jr);
        float* bp = bpack + jr * kc;
        // The next packing's source: the next panel (a group of them untransposed), or the next
        // k block's first.
        const int64_t group = g.trans_b ? NR : kGroupNN;
        if (i0 == 0 && jr % group == 0) {
          const int64_t calls = tiles * std::min(group, nc - jr) / NR;
          if (jr + group < nc) prefetch_b(pf, g, p0, kc, j0 + jr + group, std::min(group, nc - jr - group), calls);
          else if (p0 + kc < g.k) prefetch_b(pf, g, p0 + kc, std::min(KC, g.k - p0 - kc), j0, std::min(group, nc), calls);
          else pf = PanelPrefetch();
        }
        // Each B panel is packed just before its first use, while it is still in L1: packing the
        // whole slice first sends it (kc x nc floats, often larger than L2) out to L3 and back.
        // Untransposed B is packed a few panels at a time, so that each of its kc rows is read
        // 256 bytes along memory rather than one line per row and panel (a 64-row product, one
        // device's share of a data-parallel batch, ran 40 -> 55-64 GFLOP/s on one AVX2 core).
        if (i0 == 0 && g.trans_b) pack_b_of<K>(g, p0, kc, j0 + jr, cols, bp);
        if (i0 == 0 && !g.trans_b && jr % kGroupNN == 0) pack_b_of<K>(g, p0, kc, j0 + jr, std::min(kGroupNN, nc - jr), bp);
        for (int64_t ir = 0; ir < mc; ir += MR) {
          const int64_t rows = std::min(MR, mc - ir);
          const float* ap = apack + ir * kc;
          if (i0 == 0) pf.issue();
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
