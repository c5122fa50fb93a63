// Small helpers shared by the primitive definitions.
#pragma once

#include "engine/ir/primitive.h"
#include "engine/util/error.h"

namespace shardlab::ir {

inline Shape leading(const Shape& s) { return s.empty() ? Shape{} : Shape(s.begin(), s.end() - 1); }
inline int64_t last_dim(const Shape& s) { return s.empty() ? 1 : s.back(); }

// A reshape only where shapes differ, so gradients come back in their operand's shape.
inline int reshape_to(Program& p, int v, const Shape& shape, const std::string& node) {
  if (p.shape(v) == shape) return v;
  Attrs a;
  a.shape = shape;
  return p.apply1(Op::Reshape, {v}, a, node);
}

// Zeros of `shape` and `dtype`: the cotangent of an output that did not reach the loss.
inline int zeros(Program& p, const Shape& shape, DType dtype, const std::string& node) {
  Attrs zero;
  zero.alpha = 0.0;
  zero.shape = shape;
  zero.dtype = dtype;
  return p.apply1(Op::Fill, {}, zero, node);
}

inline std::vector<Shape> same_shape_as_first(const std::vector<Shape>& in, const Attrs&) {
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != in[0]) throw Error("operands have different shapes " + shape_str(in[0]) + " and " + shape_str(in[i]));
  return {in.at(0)};
}

inline double elementwise_flops(const std::vector<Shape>&, const std::vector<Shape>& out, const Attrs&) {
  return out.empty() ? 0.0 : double(numel(out[0]));
}

}  // namespace shardlab::ir
