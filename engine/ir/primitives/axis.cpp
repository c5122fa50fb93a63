// Primitives over one dimension `dim` of a value: summing it away (mean pooling over a sequence
// is this and a scale) and its transpose, broadcasting along a new dimension.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

void check_dim(const Shape& s, int64_t dim, size_t extra) {
  if (dim < 0 || size_t(dim) >= s.size() + extra)
    throw Error("dim " + std::to_string(dim) + " is out of range for " + shape_str(s));
}

}  // namespace

void register_axis(std::vector<Primitive>& t) {
  Primitive reduce;
  reduce.op = Op::ReduceAxis;
  reduce.name = "reduce_axis";
  reduce.num_inputs = 1;
  reduce.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    check_dim(in[0], a.dim, 0);
    Shape out = in[0];
    out.erase(out.begin() + a.dim);
    return std::vector<Shape>{out};
  };
  reduce.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  // The other dims keep their split; a split of the summed dim leaves a sum pending over its axes.
  reduce.partition = [](PartitionContext& c, const Instr& ins) {
    const Layout& s = c.layout(ins.in[0]);
    Layout o = s;
    o.dims.erase(o.dims.begin() + ins.attrs.dim);
    o.partial.insert(s.dims[size_t(ins.attrs.dim)].begin(), s.dims[size_t(ins.attrs.dim)].end());
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {o}, ins.attrs);
  };
  reduce.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    Attrs a;
    a.dim = ins.attrs.dim;
    a.shape = p.shape(ins.in[0]);
    return Cotangents{p.apply1(Op::Broadcast, {*ct[0]}, a, ins.node)};
  };
  t.push_back(reduce);

  Primitive broadcast;
  broadcast.op = Op::Broadcast;
  broadcast.name = "broadcast";
  broadcast.num_inputs = 1;
  broadcast.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    check_dim(in[0], a.dim, 1);
    Shape expect = a.shape;
    if (size_t(a.dim) < expect.size()) expect.erase(expect.begin() + a.dim);
    if (expect != in[0])
      throw Error("cannot broadcast " + shape_str(in[0]) + " to " + shape_str(a.shape) + " along dim " + std::to_string(a.dim));
    return std::vector<Shape>{a.shape};
  };
  broadcast.flops = [](const std::vector<Shape>&, const std::vector<Shape>&, const Attrs&) { return 0.0; };
  // The new dim is whole on every device; linear, so a pending sum stays pending.
  broadcast.partition = [](PartitionContext& c, const Instr& ins) {
    const Layout& s = c.layout(ins.in[0]);
    Layout o = s;
    o.dims.insert(o.dims.begin() + ins.attrs.dim, std::vector<std::string>{});
    Attrs a = ins.attrs;
    a.shape = c.local_shape(ins.attrs.shape, o);
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {o}, a);
  };
  broadcast.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    Attrs a;
    a.dim = ins.attrs.dim;
    return Cotangents{p.apply1(Op::ReduceAxis, {*ct[0]}, a, ins.node)};
  };
  t.push_back(broadcast);
}

}  // namespace shardlab::ir
