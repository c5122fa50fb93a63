#include "engine/project/precision_spec.h"

#include "engine/util/error.h"

namespace shardlab::project {

namespace {

DType float_dtype(const graph::Json& j, const std::string& where) {
  const std::optional<DType> d = j.is_string() ? parse_float_dtype(j.get<std::string>()) : std::nullopt;
  if (!d)
    throw Error(where + ": bad value " + j.dump() + " (expected one of " + float_dtype_names() + ")");
  return *d;
}

double positive(const graph::Json& j, const std::string& where, double lo_exclusive, double hi_exclusive) {
  if (!j.is_number() || !(j.get<double>() > lo_exclusive) || !(j.get<double>() < hi_exclusive))
    throw Error(where + ": bad value " + j.dump() + " (expected a number between " + std::to_string(lo_exclusive) + " and " +
                std::to_string(hi_exclusive) + ")");
  return j.get<double>();
}

LossScaleSpec parse_loss_scale(const graph::Json& j, const std::string& where) {
  LossScaleSpec s;
  if (!j.is_object()) throw Error(where + ": expected false or an object of initial, growth_interval, growth_factor, backoff_factor");
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string k = it.key(), at = where + "." + k;
    if (k == "initial") s.initial = positive(*it, at, 0, 1e38);
    else if (k == "growth_factor") s.growth_factor = positive(*it, at, 1, 1e6);
    else if (k == "backoff_factor") s.backoff_factor = positive(*it, at, 0, 1);
    else if (k == "growth_interval") {
      if (!it->is_number_integer() || it->get<int64_t>() < 1) throw Error(at + ": bad value " + it->dump() + " (expected an integer >= 1)");
      s.growth_interval = it->get<int64_t>();
    } else {
      throw Error(at + ": unknown field (expected one of initial, growth_interval, growth_factor, backoff_factor)");
    }
  }
  return s;
}

}  // namespace

std::string PrecisionSpec::str() const {
  if (dtype == DType::F32 && param_dtype == DType::F32 && matmul_precision == MatmulPrecision::Highest) return "float32";
  std::string s = std::string(dtype_name(dtype)) + " compute, " + dtype_name(param_dtype) + " parameters";
  if (matmul_precision != MatmulPrecision::Highest) s += std::string(", ") + matmul_precision_name(matmul_precision) + " matmuls";
  if (loss_scale) s += ", dynamic loss scaling";
  return s;
}

graph::Json summary_json(const PrecisionSpec& s) {
  return {{"param_dtype", dtype_name(s.param_dtype)},
          {"dtype", dtype_name(s.dtype)},
          {"matmul_precision", matmul_precision_name(s.matmul_precision)},
          {"loss_scaling", s.loss_scale.has_value()}};
}

PrecisionSpec parse_precision(const graph::Json& j, const std::string& where) {
  PrecisionSpec s;
  bool scale_written = false;
  if (!j.is_null()) {
    if (!j.is_object()) throw Error(where + ": expected an object of param_dtype, dtype, matmul_precision, loss_scale");
    for (auto it = j.begin(); it != j.end(); ++it) {
      const std::string k = it.key(), at = where + "." + k;
      if (k == "param_dtype") s.param_dtype = float_dtype(*it, at);
      else if (k == "dtype") s.dtype = float_dtype(*it, at);
      else if (k == "matmul_precision") {
        const std::optional<MatmulPrecision> m = it->is_string() ? parse_matmul_precision(it->get<std::string>()) : std::nullopt;
        if (!m) throw Error(at + ": bad value " + it->dump() + " (expected highest, tf32 or bf16)");
        s.matmul_precision = *m;
      } else if (k == "loss_scale") {
        scale_written = true;
        if (it->is_boolean() && !it->get<bool>()) continue;
        if (it->is_boolean()) s.loss_scale = LossScaleSpec{};
        else s.loss_scale = parse_loss_scale(*it, at);
      } else {
        throw Error(at + ": unknown field (expected one of param_dtype, dtype, matmul_precision, loss_scale)");
      }
    }
  }
  if (!scale_written && s.dtype == DType::F16) s.loss_scale = LossScaleSpec{};
  return s;
}

}  // namespace shardlab::project
