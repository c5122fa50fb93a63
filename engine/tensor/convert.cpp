#include "engine/tensor/convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define SHARDLAB_CONVERT_AVX2 1
#endif

namespace shardlab {

uint16_t float_to_f16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = uint16_t((bits >> 16) & 0x8000u);
  uint32_t x = bits & 0x7FFFFFFFu;
  if (x > 0x7F800000u) return uint16_t(sign | 0x7E00u | ((x >> 13) & 0x3FFu));  // NaN, quiet
  if (x >= 0x477FF000u) return uint16_t(sign | 0x7C00u);  // >= 65520 (or inf) rounds to infinity
  if (x >= 0x38800000u) {                                  // normal half: rebias, round mantissa to 10 bits
    x -= 0x38000000u;
    x += 0x0FFFu + ((x >> 13) & 1u);
    return uint16_t(sign | (x >> 13));
  }
  // Subnormal half (or zero): value / 2^-24, rounded to nearest even.
  const uint32_t exp = x >> 23;
  if (exp < 102) return sign;  // below 2^-25: rounds to zero
  const uint32_t mant = (x & 0x7FFFFFu) | 0x800000u;
  const uint32_t shift = 126 - exp;  // 14..24
  uint32_t r = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (r & 1u))) ++r;
  return uint16_t(sign | r);
}

float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {
    const float v = float(mant) * 0x1p-24f;  // exact
    return sign ? -v : v;
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

namespace {

int32_t float_to_i32(float v) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483647.f) return std::numeric_limits<int32_t>::max();
  if (v <= -2147483648.f) return std::numeric_limits<int32_t>::min();
  return int32_t(std::nearbyint(v));
}

#if SHARDLAB_CONVERT_AVX2
// Eight floats to bfloat16 with the scalar rounding: x + 0x7FFF + lsb, NaN made quiet.
inline __m128i bf16x8(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x0040));
  r = _mm256_blendv_epi8(r, quiet, nan);
  // Pack the 32-bit lanes' low halves (each < 2^16) into eight 16-bit values.
  const __m256i packed = _mm256_packus_epi32(r, r);  // lanes: [0..3 0..3 | 4..7 4..7]
  return _mm256_castsi256_si128(_mm256_permute4x64_epi64(packed, 0x08));
}
#endif

template <class T>
void to_wide(const void* src, DType from, T* dst, size_t n) {
  size_t i = 0;
  switch (from) {
    case DType::F32: {
      const float* s = static_cast<const float*>(src);
      if constexpr (std::is_same_v<T, float>) {
        if (static_cast<const void*>(dst) != src) std::memcpy(dst, s, n * sizeof(float));
      } else {
        for (; i < n; ++i) dst[i] = T(s[i]);
      }
      return;
    }
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
#if SHARDLAB_CONVERT_AVX2
      if constexpr (std::is_same_v<T, float>)
        for (; i + 8 <= n; i += 8) {
          const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
          _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(w, 16)));
        }
#endif
      for (; i < n; ++i) dst[i] = T(bf16_to_float(s[i]));
      return;
    }
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
#if SHARDLAB_CONVERT_AVX2
      if constexpr (std::is_same_v<T, float>)
        for (; i + 8 <= n; i += 8)
          _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
#endif
      for (; i < n; ++i) dst[i] = T(f16_to_float(s[i]));
      return;
    }
    case DType::I32: {
      const int32_t* s = static_cast<const int32_t*>(src);
      for (; i < n; ++i) dst[i] = T(s[i]);
      return;
    }
    case DType::F64: {
      const double* s = static_cast<const double*>(src);
      for (; i < n; ++i) dst[i] = T(s[i]);
      return;
    }
  }
}

template <class T>
void from_wide(const T* src, void* dst, DType to, size_t n) {
  size_t i = 0;
  switch (to) {
    case DType::F32: {
      float* d = static_cast<float*>(dst);
      if constexpr (std::is_same_v<T, float>) {
        if (static_cast<void*>(const_cast<float*>(src)) != dst) std::memcpy(d, src, n * sizeof(float));
      } else {
        for (; i < n; ++i) d[i] = float(src[i]);
      }
      return;
    }
    case DType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
#if SHARDLAB_CONVERT_AVX2
      if constexpr (std::is_same_v<T, float>)
        for (; i + 8 <= n; i += 8) _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), bf16x8(_mm256_loadu_ps(src + i)));
#endif
      // A double rounds to float first (to nearest), then to bfloat16.
      for (; i < n; ++i) d[i] = float_to_bf16(float(src[i]));
      return;
    }
    case DType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
#if SHARDLAB_CONVERT_AVX2
      if constexpr (std::is_same_v<T, float>)
        for (; i + 8 <= n; i += 8)
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
      for (; i < n; ++i) d[i] = float_to_f16(float(src[i]));
      return;
    }
    case DType::I32: {
      int32_t* d = static_cast<int32_t*>(dst);
      for (; i < n; ++i) d[i] = float_to_i32(float(src[i]));
      return;
    }
    case DType::F64: {
      double* d = static_cast<double*>(dst);
      for (; i < n; ++i) d[i] = double(src[i]);
      return;
    }
  }
}

}  // namespace

float load_as_float(const void* p, DType d) {
  float v;
  to_wide(p, d, &v, 1);
  return v;
}

void store_from_float(void* p, DType d, float v) { from_wide(&v, p, d, 1); }

void to_float(const void* src, DType from, float* dst, size_t n) { to_wide(src, from, dst, n); }
void from_float(const float* src, void* dst, DType to, size_t n) { from_wide(src, dst, to, n); }
void to_float(const void* src, DType from, double* dst, size_t n) { to_wide(src, from, dst, n); }
void from_float(const double* src, void* dst, DType to, size_t n) { from_wide(src, dst, to, n); }

void round_for_matmul(float* x, size_t n, MatmulPrecision p) {
  if (p == MatmulPrecision::Highest) return;
  if (p == MatmulPrecision::F16) return round_to_dtype(x, n, DType::F16);
  const int mantissa = p == MatmulPrecision::Tf32 ? 10 : 7;
  for (size_t i = 0; i < n; ++i) x[i] = round_mantissa(x[i], mantissa);
}

namespace {
template <class T>
void round_through(T* x, size_t n, DType d) {
  if (!is_16bit(d)) return;
  constexpr size_t kChunk = 1024;
  uint16_t bits[kChunk];
  for (size_t off = 0; off < n; off += kChunk) {
    const size_t len = std::min(kChunk, n - off);
    from_float(x + off, bits, d, len);
    to_float(bits, d, x + off, len);
  }
}
}  // namespace

void round_to_dtype(float* x, size_t n, DType d) { round_through(x, n, d); }
void round_to_dtype(double* x, size_t n, DType d) { round_through(x, n, d); }

}  // namespace shardlab
