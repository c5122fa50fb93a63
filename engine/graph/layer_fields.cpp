#include <algorithm>

#include "engine/graph/layer.h"
#include "engine/graph/layers/common_fields.h"
#include "engine/util/error.h"

namespace shardlab::graph::fields {

int64_t positive_int(const Json& p, const char* key, int64_t fallback) {
  if (!p.contains(key)) {
    if (fallback < 0) throw Error(std::string(key) + ": missing (a positive integer is required)");
    return fallback;
  }
  const Json& v = p[key];
  if (!v.is_number_integer() || v.get<int64_t>() <= 0)
    throw Error(std::string(key) + ": bad value " + v.dump() + " (expected a positive integer)");
  return v.get<int64_t>();
}

double number(const Json& p, const char* key, double fallback, double lo, double hi) {
  if (!p.contains(key)) return fallback;
  const Json& v = p[key];
  if (!v.is_number() || v.get<double>() < lo || v.get<double>() > hi)
    throw Error(std::string(key) + ": bad value " + v.dump() + " (expected a number in [" + std::to_string(lo) + ", " +
                std::to_string(hi) + "])");
  return v.get<double>();
}

bool boolean(const Json& p, const char* key, bool fallback) {
  if (!p.contains(key)) return fallback;
  if (!p[key].is_boolean()) throw Error(std::string(key) + ": bad value " + p[key].dump() + " (expected true or false)");
  return p[key].get<bool>();
}

std::string string(const Json& p, const char* key, const std::string& fallback) {
  if (!p.contains(key)) return fallback;
  if (!p[key].is_string()) throw Error(std::string(key) + ": bad value " + p[key].dump() + " (expected a string)");
  return p[key].get<std::string>();
}

std::vector<std::string> names(const Json& j, const std::string& what) {
  if (!j.is_array()) throw Error(what + ": expected a list of logical axis names, got " + j.dump());
  std::vector<std::string> out;
  for (const Json& e : j) {
    if (!e.is_string() || e.get<std::string>().empty())
      throw Error(what + ": bad axis name " + e.dump() + " (expected a non-empty string)");
    out.push_back(e.get<std::string>());
  }
  return out;
}

Shape per_example_shape(const Json& p, const std::string& example) {
  if (!p.contains("shape")) throw Error("shape: missing (the per-example shape, e.g. " + example + ")");
  const Json& s = p["shape"];
  if (!s.is_array()) throw Error("shape: expected a list of positive integers, got " + s.dump());
  Shape out;
  for (const Json& d : s) {
    if (!d.is_number_integer() || d.get<int64_t>() <= 0)
      throw Error("shape: bad dimension " + d.dump() + " (expected a positive integer)");
    out.push_back(d.get<int64_t>());
  }
  return out;
}

std::vector<std::string> axis_names(const Json& p, size_t rank) {
  std::vector<std::string> axes = p.contains("axes") ? names(p["axes"], "axes") : std::vector<std::string>{};
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i) axes.push_back(i + 1 == rank ? "embed" : "dim" + std::to_string(i));
  if (axes.size() != rank)
    throw Error("axes: " + std::to_string(axes.size()) + " names for a shape of rank " + std::to_string(rank));
  return axes;
}

InitSpec init(const Json& p, const char* key, const Json& fallback) {
  try {
    return parse_init(p.contains(key) ? p[key] : fallback);
  } catch (const Error& e) {
    throw Error(std::string(key) + ": " + e.what());
  }
}

void only(const Json& p, std::initializer_list<const char*> allowed) {
  if (!p.is_object()) throw Error("params: expected an object, got " + p.dump());
  for (auto it = p.begin(); it != p.end(); ++it)
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return it.key() == a; })) {
      std::string list;
      for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
      throw Error(it.key() + ": unknown field (expected " + (list.empty() ? "none" : list) + ")");
    }
}

std::vector<std::string> param_axes(const Node& node, const std::string& name, std::vector<std::string> fallback,
                                    size_t rank) {
  if (node.param_axes.is_object() && node.param_axes.contains(name))
    fallback = names(node.param_axes[name], "param_axes." + name);
  if (fallback.size() != rank)
    throw Error("param_axes." + name + ": " + std::to_string(fallback.size()) + " names for a parameter of rank " +
                std::to_string(rank));
  return fallback;
}

}  // namespace shardlab::graph::fields
