// Windows over an image (batch, height, width, channels), for convolution and pooling. A
// convolution is Patches then a GEMM with the flattened kernel (the CPU's fast path is the GEMM);
// a pool is Patches then a sum or a max over the window. The spatial dims are whole on every
// device (a window crosses any split of them); the batch and channel splits carry through.
#include <algorithm>

#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

// The result of Patches on image `x`, or an error naming what does not fit.
Shape patches_shape(const Shape& x, const Attrs& a) {
  if (x.size() != 4) throw Error("needs an image (batch, height, width, channels), got " + shape_str(x));
  if (a.window.size() != 2 || a.strides.size() != 2 || a.dilation.size() != 2 || a.pads.size() != 4)
    throw Error("internal: window, strides and dilation need 2 values and pads 4");
  Shape out{x[0]};
  for (size_t d = 0; d < 2; ++d) {
    const int64_t span = a.dilation[d] * (a.window[d] - 1) + 1, padded = x[1 + d] + a.pads[2 * d] + a.pads[2 * d + 1];
    if (a.window[d] < 1 || a.strides[d] < 1 || a.dilation[d] < 1 || a.pads[2 * d] < 0 || a.pads[2 * d + 1] < 0)
      throw Error("window, strides and dilation must be positive and padding not negative");
    if (span > padded)
      throw Error(std::string("a window ") + std::to_string(span) + " wide does not fit the " + (d ? "width " : "height ") +
                  std::to_string(x[1 + d]) + " (padded to " + std::to_string(padded) + ")");
    out.push_back((padded - span) / a.strides[d] + 1);
  }
  out.insert(out.end(), {a.window[0], a.window[1], x[3]});
  return out;
}

Shape without_dim(Shape s, int64_t dim) {
  if (dim < 0 || dim >= int64_t(s.size())) throw Error("dim " + std::to_string(dim) + " is not a dim of " + shape_str(s));
  s.erase(s.begin() + dim);
  return s;
}

}  // namespace

void register_windows(std::vector<Primitive>& t) {
  Primitive patches;
  patches.op = Op::Patches;
  patches.name = "patches";
  patches.num_inputs = 1;
  patches.shapes = [](const std::vector<Shape>& in, const Attrs& a) { return std::vector<Shape>{patches_shape(in[0], a)}; };
  patches.flops = [](const std::vector<Shape>&, const std::vector<Shape>&, const Attrs&) { return 0.0; };
  // Zero padding keeps it linear (a pending sum stays pending); -inf padding does not.
  patches.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = ins.attrs.pad_lowest ? c.layout(ins.in[0]).without_partial() : c.layout(ins.in[0]);
    s.dims[1].clear();
    s.dims[2].clear();
    Layout o{{s.dims[0], {}, {}, {}, {}, s.dims[3]}, s.partial};
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {o}, ins.attrs);
  };
  patches.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    Attrs a = ins.attrs;
    a.shape = p.shape(ins.in[0]);
    a.pad_lowest = false;
    return Cotangents{p.apply1(Op::PatchesGrad, {*ct[0]}, a, ins.node)};
  };
  t.push_back(patches);

  Primitive patches_grad;
  patches_grad.op = Op::PatchesGrad;
  patches_grad.name = "patches_grad";
  patches_grad.num_inputs = 1;
  patches_grad.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    if (patches_shape(a.shape, a) != in[0])
      throw Error("windows " + shape_str(in[0]) + " are not those of an image " + shape_str(a.shape));
    return std::vector<Shape>{a.shape};
  };
  patches_grad.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  patches_grad.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = c.layout(ins.in[0]);
    for (size_t d = 1; d <= 4; ++d) s.dims[d].clear();
    Layout o{{s.dims[0], {}, {}, s.dims[5]}, s.partial};
    Attrs a = ins.attrs;
    a.shape = c.local_shape(ins.attrs.shape, o);
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {o}, a);
  };
  patches_grad.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::Patches, {*ct[0]}, ins.attrs, ins.node)};
  };
  t.push_back(patches_grad);

  Primitive reduce_max;
  reduce_max.op = Op::ReduceMax;
  reduce_max.name = "reduce_max";
  reduce_max.num_inputs = 1;
  reduce_max.shapes = [](const std::vector<Shape>& in, const Attrs& a) { return std::vector<Shape>{without_dim(in[0], a.dim)}; };
  reduce_max.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  // Not linear: a pending sum is reduced first; the reduced dim is whole.
  reduce_max.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = c.layout(ins.in[0]).without_partial();
    s.dims[size_t(ins.attrs.dim)].clear();
    Layout o = s;
    o.dims.erase(o.dims.begin() + ins.attrs.dim);
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {o}, ins.attrs);
  };
  reduce_max.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::ReduceMaxGrad, {ins.in[0], *ct[0]}, ins.attrs, ins.node)};
  };
  t.push_back(reduce_max);

  // ReduceMaxGrad(x, g): x's shape, g[...] at the first largest x along `dim`, 0 elsewhere.
  Primitive reduce_max_grad;
  reduce_max_grad.op = Op::ReduceMaxGrad;
  reduce_max_grad.name = "reduce_max_grad";
  reduce_max_grad.num_inputs = 2;
  reduce_max_grad.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    if (without_dim(in[0], a.dim) != in[1])
      throw Error("cotangent " + shape_str(in[1]) + " is not that of " + shape_str(in[0]) + " reduced along dim " + std::to_string(a.dim));
    return std::vector<Shape>{in[0]};
  };
  reduce_max_grad.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  reduce_max_grad.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = c.layout(ins.in[0]).without_partial();
    s.dims[size_t(ins.attrs.dim)].clear();
    Layout g = s;
    g.dims.erase(g.dims.begin() + ins.attrs.dim);
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node), c.reshard(ins.in[1], g, ins.node)}, {s}, ins.attrs);
  };
  t.push_back(reduce_max_grad);
}

}  // namespace shardlab::ir
