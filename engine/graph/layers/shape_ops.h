// Reshape and Transpose as layers lower to them (attention's heads, a convolution's windows).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/ir/program.h"

namespace shardlab::graph::ops {

// `v` in shape `to` (itself where it already is).
inline int reshape(ir::Program& p, int v, Shape to, const std::string& node) {
  if (p.shape(v) == to) return v;
  ir::Attrs a;
  a.shape = std::move(to);
  return p.apply1(ir::Op::Reshape, {v}, a, node);
}

// `v` with result dim d its dim perm[d].
inline int transpose(ir::Program& p, int v, std::vector<int64_t> perm, const std::string& node) {
  ir::Attrs a;
  a.perm = std::move(perm);
  return p.apply1(ir::Op::Transpose, {v}, a, node);
}

}  // namespace shardlab::graph::ops
