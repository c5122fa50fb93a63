#include "engine/tensor/dtype.h"

namespace shardlab {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::F32: return "float32";
    case DType::BF16: return "bfloat16";
    case DType::F16: return "float16";
    case DType::I32: return "int32";
    case DType::F64: return "float64";
  }
  return "?";
}

const char* dtype_short(DType d) {
  switch (d) {
    case DType::F32: return "f32";
    case DType::BF16: return "bf16";
    case DType::F16: return "f16";
    case DType::I32: return "i32";
    case DType::F64: return "f64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  for (DType d : {DType::F32, DType::BF16, DType::F16, DType::I32})
    if (s == dtype_name(d) || s == dtype_short(d)) return d;
  if (s == "half") return DType::F16;
  return std::nullopt;
}

std::optional<DType> parse_float_dtype(std::string_view s) {
  const std::optional<DType> d = parse_dtype(s);
  if (!d || *d == DType::I32 || *d == DType::F64) return std::nullopt;
  return d;
}

std::string float_dtype_names() { return "float32, bfloat16, float16"; }

const char* matmul_precision_name(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::Highest: return "highest";
    case MatmulPrecision::Tf32: return "tf32";
    case MatmulPrecision::Bf16: return "bf16";
    case MatmulPrecision::F16: return "f16";
  }
  return "?";
}

MatmulPrecision rounding_to(DType d) {
  return d == DType::BF16 ? MatmulPrecision::Bf16 : d == DType::F16 ? MatmulPrecision::F16 : MatmulPrecision::Highest;
}

std::optional<MatmulPrecision> parse_matmul_precision(std::string_view s) {
  // JAX's spellings too: "float32" is "highest", "tensorfloat32" is "tf32", "bfloat16" is "bf16".
  if (s == "highest" || s == "float32") return MatmulPrecision::Highest;
  if (s == "tf32" || s == "tensorfloat32") return MatmulPrecision::Tf32;
  if (s == "bf16" || s == "bfloat16") return MatmulPrecision::Bf16;
  return std::nullopt;
}

}  // namespace shardlab
