// Conversions between float and the 16-bit floats, one element or whole arrays. Float to 16 bit
// rounds to nearest, ties to even; overflow goes to infinity (f16: |x| >= 65520); NaN stays a quiet
// NaN with its sign; f16 subnormals are produced and read exactly. 16 bit to float is exact. The
// array forms use F16C and AVX2 where the build has them (the x86-64-v3 baseline does).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

#include "engine/tensor/dtype.h"

namespace shardlab {

inline uint16_t float_to_bf16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return uint16_t((x >> 16) | 0x0040u);  // NaN: keep sign, make quiet
  return uint16_t((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);                   // ties to even; overflow -> inf
}
inline float bf16_to_float(uint16_t h) { return std::bit_cast<float>(uint32_t(h) << 16); }
uint16_t float_to_f16(float f);
float f16_to_float(uint16_t h);

// x rounded to the nearest value with an 8-bit exponent and `mantissa` explicit bits (7: bfloat16,
// 10: TensorFloat-32), ties to even; inf and NaN pass through.
inline float round_mantissa(float x, int mantissa) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  if ((u & 0x7F800000u) == 0x7F800000u) return x;
  const int drop = 23 - mantissa;
  const uint32_t r = u + ((1u << (drop - 1)) - 1u) + ((u >> drop) & 1u);
  return std::bit_cast<float>(r & ~((1u << drop) - 1u));
}
inline float round_to_tf32(float x) { return round_mantissa(x, 10); }
inline float round_to_bf16(float x) { return round_mantissa(x, 7); }

// One element of dtype `d` at `p` as float, and a float stored there (rounded as above; I32
// converts by rounding to nearest, saturating).
float load_as_float(const void* p, DType d);
void store_from_float(void* p, DType d, float v);

// n elements of `from` at src into n floats, and back. src and dst may be the same buffer only when
// the sizes agree (F32, I32).
void to_float(const void* src, DType from, float* dst, size_t n);
void from_float(const float* src, void* dst, DType to, size_t n);
// The same through double (the tests' double-precision executor).
void to_float(const void* src, DType from, double* dst, size_t n);
void from_float(const double* src, void* dst, DType to, size_t n);
// n floats rounded in place as a matmul of this precision rounds its float32 operands.
void round_for_matmul(float* x, size_t n, MatmulPrecision p);
// n values rounded in place to what 16-bit `d` holds (through float), kept in their own type: a
// matmul result the model stores in `d` but a folded Convert widens at once (ir/cast_folding.h).
void round_to_dtype(float* x, size_t n, DType d);
void round_to_dtype(double* x, size_t n, DType d);

}  // namespace shardlab
