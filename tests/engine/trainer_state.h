// A trainer's whole state (parameters and optimizer state) as a map, and bit-for-bit comparison of
// two such maps: what the resume and restore tests check.
#pragma once

#include <cstring>
#include <map>
#include <string>

#include "engine/runtime/trainer.h"

namespace shardlab::testing {

inline std::map<std::string, Tensor> states(const runtime::Trainer& t) {
  std::map<std::string, Tensor> m;
  for (const std::string& n : t.state_names()) m[n] = t.state(n);
  return m;
}

inline bool bitwise_equal(const std::map<std::string, Tensor>& a, const std::map<std::string, Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end() || it->second.shape != v.shape || std::memcmp(v.ptr(), it->second.ptr(), v.data.size() * sizeof(float)) != 0)
      return false;
  }
  return true;
}

}  // namespace shardlab::testing
