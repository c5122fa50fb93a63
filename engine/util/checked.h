// Overflow-checked arithmetic for sizes, counts and products that come from a user (mesh sizes,
// shapes, batch sizes, repeat counts, byte sizes): signed overflow is undefined behaviour, and a
// wrapped product looks like a small valid size, so every such product goes through here and a
// failure names the field it was computing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/util/error.h"

namespace shardlab::util {

// a * b and a + b, or nothing when the result does not fit in T.
template <class T>
std::optional<T> mul(T a, T b) {
  T r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
template <class T>
std::optional<T> add(T a, T b) {
  T r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of `dims`, or nothing when it overflows int64 or a dimension is negative.
inline std::optional<int64_t> product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return std::nullopt;
    auto next = mul(n, d);
    if (!next) return std::nullopt;
    n = *next;
  }
  return n;
}

// The same, throwing Error("<field>: ...") instead of returning nothing.
inline int64_t mul_or_throw(int64_t a, int64_t b, const std::string& field) {
  auto r = mul(a, b);
  if (!r) throw Error(field + ": " + std::to_string(a) + " x " + std::to_string(b) + " overflows 64 bits");
  return *r;
}
inline int64_t add_or_throw(int64_t a, int64_t b, const std::string& field) {
  auto r = add(a, b);
  if (!r) throw Error(field + ": " + std::to_string(a) + " + " + std::to_string(b) + " overflows 64 bits");
  return *r;
}

}  // namespace shardlab::util
