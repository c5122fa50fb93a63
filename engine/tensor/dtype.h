// The element types a program's values hold: float32, the two 16-bit floats of mixed precision
// (bfloat16, IEEE half), and int32 for labels and indices. Names follow NumPy/JAX ("bfloat16").
// float64 is no program's type: it is how the tests' double-precision executor holds float32
// values, and what its collectives move.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace shardlab {

enum class DType : uint8_t { F32, BF16, F16, I32, F64 };

constexpr size_t dtype_size(DType d) { return d == DType::BF16 || d == DType::F16 ? 2 : d == DType::F64 ? 8 : 4; }
constexpr bool is_float(DType d) { return d != DType::I32; }
constexpr bool is_16bit(DType d) { return d == DType::BF16 || d == DType::F16; }

// "float32", "bfloat16", "float16", "int32" ("float64"): what project files and --dtype use.
const char* dtype_name(DType d);
// "f32", "bf16", "f16", "i32": how a program listing and the sharding view abbreviate it.
const char* dtype_short(DType d);
// Either spelling (and "half" for float16) of a program's types; nullopt for anything else.
std::optional<DType> parse_dtype(std::string_view s);
// A compute or parameter dtype: float32, bfloat16 or float16 by either spelling; nullopt otherwise.
std::optional<DType> parse_float_dtype(std::string_view s);
// The accepted names, for error messages: "float32, bfloat16, float16".
std::string float_dtype_names();

// How a float32 matmul rounds its operands (jax.default_matmul_precision): not at all, to
// TensorFloat-32's 10-bit mantissa, or to bfloat16's 7-bit one; products accumulate in float32.
// F16 (to half, range included) is no user's setting: it is how a matmul whose float16 Convert was
// folded into it reads its float32 operands (ir/cast_folding.h).
enum class MatmulPrecision : uint8_t { Highest, Tf32, Bf16, F16 };
const char* matmul_precision_name(MatmulPrecision p);  // "highest", "tf32", "bf16" ("f16")
// The precision that rounds a float32 value as storing it in 16-bit `d` would (BF16 or F16).
MatmulPrecision rounding_to(DType d);
std::optional<MatmulPrecision> parse_matmul_precision(std::string_view s);

}  // namespace shardlab
