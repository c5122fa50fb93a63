#include "engine/graph/init.h"

#include <algorithm>
#include <cmath>

#include "engine/util/error.h"
#include "engine/util/hash.h"

namespace shardlab::graph {

namespace {

double uniform01(uint64_t key, uint64_t i) {
  // (0, 1]: never 0, so log() below is finite
  return (double(util::mix64(key ^ util::mix64(i)) >> 11) + 1.0) * 0x1.0p-53;
}

// Standard normal from element index and attempt number (Box-Muller on two counter draws).
double normal(uint64_t key, uint64_t i, uint64_t attempt) {
  const uint64_t base = (i << 8) ^ (attempt << 1);
  double u1 = uniform01(key, base), u2 = uniform01(key, base | 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Normal truncated to [-2, 2], by redrawing with the next attempt counter (deterministic).
double truncated_normal(uint64_t key, uint64_t i) {
  for (uint64_t a = 0;; ++a) {
    double z = normal(key, i, a);
    if (std::abs(z) <= 2.0) return z;
  }
}

}  // namespace

InitSpec parse_init(const Json& j) {
  InitSpec s;
  if (j.is_string()) {
    s.type = j.get<std::string>();
  } else if (j.is_object() && j.contains("type") && j["type"].is_string()) {
    s.type = j["type"].get<std::string>();
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "type") continue;
      if (it.key() == "stddev" && it.value().is_number() && it.value().get<double>() > 0) s.stddev = it.value().get<double>();
      else throw Error("initializer field '" + it.key() + "' is not valid (only 'stddev' > 0 for normal)");
    }
  } else {
    throw Error("initializer must be a name or {\"type\": ..., \"stddev\": ...}");
  }
  static const char* known[] = {"lecun_normal", "xavier_normal", "xavier_uniform", "normal", "embed_normal", "zeros", "ones"};
  for (const char* k : known)
    if (s.type == k) return s;
  throw Error("unknown initializer '" + s.type + "' (expected lecun_normal, xavier_normal, xavier_uniform, normal, embed_normal, zeros or ones)");
}

Json init_to_json(const InitSpec& s) {
  if (s.type != "normal") return s.type;
  return Json{{"type", "normal"}, {"stddev", s.stddev}};
}

void initialize(float* out, const Shape& shape, int64_t count, const InitSpec& spec, const std::string& path,
                uint64_t seed) {
  const int64_t n = numel(shape);
  // Flax's variance scaling: fan_in = product of all but the last dim, fan_out = last dim (or the
  // product of the dims after in_dims).
  const size_t in_dims = spec.in_dims >= 0 ? std::min(size_t(spec.in_dims), shape.size()) : shape.empty() ? 0 : shape.size() - 1;
  const double fan_in = double(numel(Shape(shape.begin(), shape.begin() + in_dims)));
  const double fan_out = shape.empty() ? 1.0 : double(n) / fan_in;
  // Stddev of the standard normal truncated to [-2, 2]; Flax divides by it to keep the variance.
  constexpr double kTruncStd = 0.87962566103423978;
  for (int64_t layer = 0; layer < count; ++layer) {
    const uint64_t key = util::mix64(seed ^ util::hash_name(count > 1 ? path + "#" + std::to_string(layer) : path));
    float* dst = out + layer * n;
    for (int64_t i = 0; i < n; ++i) {
      double v = 0.0;
      if (spec.type == "zeros") v = 0.0;
      else if (spec.type == "ones") v = 1.0;
      else if (spec.type == "normal") v = spec.stddev * normal(key, uint64_t(i), 0);
      else if (spec.type == "embed_normal") v = normal(key, uint64_t(i), 0) / std::sqrt(fan_out);  // nn.Embed's default
      else if (spec.type == "lecun_normal") v = std::sqrt(1.0 / fan_in) / kTruncStd * truncated_normal(key, uint64_t(i));
      else if (spec.type == "xavier_normal") v = std::sqrt(2.0 / (fan_in + fan_out)) / kTruncStd * truncated_normal(key, uint64_t(i));
      else if (spec.type == "xavier_uniform") v = std::sqrt(6.0 / (fan_in + fan_out)) * (2.0 * uniform01(key, uint64_t(i)) - 1.0);
      else throw Error("unknown initializer '" + spec.type + "'");
      dst[i] = float(v);
    }
  }
}

}  // namespace shardlab::graph
