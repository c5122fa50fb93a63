// Primitives that broadcast a row vector over, or reduce over, all leading dimensions:
// bias add, per-feature scale, their gradients, and layer normalisation and softmax over the last
// axis.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

std::vector<Shape> row_broadcast(const std::vector<Shape>& in, const Attrs&) {
  if (in[0].empty() || in[1] != Shape{in[0].back()})
    throw Error("row operand " + shape_str(in[1]) + " does not match the last dimension of " + shape_str(in[0]));
  return {in[0]};
}

// The row vector is split like the last dimension of the operand it is broadcast over.
void row_broadcast_rule(PartitionContext& c, const Instr& ins) {
  Layout s = c.layout(ins.in[0]).without_partial();
  Layout row{{s.dims.back()}, {}};
  c.produce(ins, {c.reshard(ins.in[0], s, ins.node), c.reshard(ins.in[1], row, ins.node)}, {s}, ins.attrs);
}

// Row statistics need the whole feature dimension on each device.
void layer_norm_rule(PartitionContext& c, const Instr& ins) {
  Layout s = c.layout(ins.in[0]).without_partial();
  s.dims.back().clear();
  std::vector<int> ops;
  for (int v : ins.in) ops.push_back(c.reshard(v, s, ins.node));
  c.produce(ins, ops, {s}, ins.attrs);
}

// Softmax needs whole rows; a causal one also whole columns, since the mask compares a row's
// query index with the key index.
void softmax_rule(PartitionContext& c, const Instr& ins) {
  Layout s = c.layout(ins.in[0]).without_partial();
  s.dims.back().clear();
  if (ins.attrs.causal) s.dims[s.dims.size() - 2].clear();
  std::vector<int> ops;
  for (int v : ins.in) ops.push_back(c.reshard(v, s, ins.node));
  c.produce(ins, ops, {s}, ins.attrs);
}

std::vector<Shape> softmax_shape(const std::vector<Shape>& in, const Attrs& a) {
  if (in[0].size() < (a.causal ? 2u : 1u)) throw Error(a.causal ? "a causal softmax needs (..., queries, keys)" : "needs rank >= 1");
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != in[0]) throw Error("operands have different shapes " + shape_str(in[0]) + " and " + shape_str(in[i]));
  return {in[0]};
}

}  // namespace

void register_rowwise(std::vector<Primitive>& t) {
  Primitive bias;
  bias.op = Op::BiasAdd;
  bias.name = "bias_add";
  bias.num_inputs = 2;
  bias.shapes = row_broadcast;
  bias.flops = elementwise_flops;
  bias.partition = row_broadcast_rule;
  bias.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Cotangents r(2);
    if (needs[0]) r[0] = ct[0];
    if (needs[1]) r[1] = p.apply1(Op::ReduceRows, {*ct[0]}, {}, ins.node);
    return r;
  };
  t.push_back(bias);

  Primitive mulrow;
  mulrow.op = Op::MulRow;
  mulrow.name = "mul_row";
  mulrow.num_inputs = 2;
  mulrow.shapes = row_broadcast;
  mulrow.flops = elementwise_flops;
  mulrow.partition = row_broadcast_rule;
  mulrow.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Cotangents r(2);
    if (needs[0]) r[0] = p.apply1(Op::MulRow, {*ct[0], ins.in[1]}, {}, ins.node);
    if (needs[1]) r[1] = p.apply1(Op::ReduceRows, {p.apply1(Op::Mul, {*ct[0], ins.in[0]}, {}, ins.node)}, {}, ins.node);
    return r;
  };
  t.push_back(mulrow);

  Primitive reduce;
  reduce.op = Op::ReduceRows;
  reduce.name = "reduce_rows";
  reduce.num_inputs = 1;
  reduce.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in[0].empty()) throw Error("needs rank >= 1");
    return std::vector<Shape>{Shape{in[0].back()}};
  };
  reduce.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return double(numel(in[0])); };
  // Summing rows split over some axes leaves a sum pending over those axes.
  reduce.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = c.layout(ins.in[0]).without_partial();
    Layout o{{s.dims.back()}, {}};
    for (size_t d = 0; d + 1 < s.dims.size(); ++d) o.partial.insert(s.dims[d].begin(), s.dims[d].end());
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {o}, ins.attrs);
  };
  reduce.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    const int z = zeros(p, p.shape(ins.in[0]), p.dtype(*ct[0]), ins.node);
    return Cotangents{p.apply1(Op::BiasAdd, {z, *ct[0]}, {}, ins.node)};
  };
  t.push_back(reduce);

  Primitive ln;
  ln.op = Op::LayerNorm;
  ln.name = "layer_norm";
  ln.num_inputs = 1;
  ln.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in[0].empty()) throw Error("needs rank >= 1");
    return std::vector<Shape>{in[0]};
  };
  ln.partition = layer_norm_rule;
  ln.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 5.0 * double(numel(in[0])); };
  ln.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::LayerNormGrad, {ins.in[0], *ct[0]}, ins.attrs, ins.node)};
  };
  t.push_back(ln);

  Primitive ln_grad;  // backward only: recomputes the row statistics instead of keeping them
  ln_grad.op = Op::LayerNormGrad;
  ln_grad.name = "layer_norm_grad";
  ln_grad.num_inputs = 2;
  ln_grad.shapes = same_shape_as_first;
  ln_grad.partition = layer_norm_rule;
  ln_grad.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 10.0 * double(numel(in[0])); };
  t.push_back(ln_grad);

  Primitive rms;
  rms.op = Op::RmsNorm;
  rms.name = "rms_norm";
  rms.num_inputs = 1;
  rms.shapes = ln.shapes;
  rms.partition = layer_norm_rule;
  rms.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 3.0 * double(numel(in[0])); };
  rms.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::RmsNormGrad, {ins.in[0], *ct[0]}, ins.attrs, ins.node)};
  };
  t.push_back(rms);

  Primitive rms_grad;  // backward only: recomputes the row's mean square
  rms_grad.op = Op::RmsNormGrad;
  rms_grad.name = "rms_norm_grad";
  rms_grad.num_inputs = 2;
  rms_grad.shapes = same_shape_as_first;
  rms_grad.partition = layer_norm_rule;
  rms_grad.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 6.0 * double(numel(in[0])); };
  t.push_back(rms_grad);

  Primitive softmax;
  softmax.op = Op::Softmax;
  softmax.name = "softmax";
  softmax.num_inputs = 1;
  softmax.shapes = softmax_shape;
  softmax.partition = softmax_rule;
  softmax.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 5.0 * double(numel(in[0])); };
  // From the output alone (masked entries are 0 there, so their gradient is too).
  softmax.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::SoftmaxGrad, {ins.out[0], *ct[0]}, ins.attrs, ins.node)};
  };
  t.push_back(softmax);

  Primitive softmax_grad;  // backward only: dx = y * (g - sum(g * y)) per row
  softmax_grad.op = Op::SoftmaxGrad;
  softmax_grad.name = "softmax_grad";
  softmax_grad.num_inputs = 2;
  softmax_grad.shapes = softmax_shape;
  softmax_grad.partition = softmax_rule;
  softmax_grad.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 4.0 * double(numel(in[0])); };
  t.push_back(softmax_grad);
}

}  // namespace shardlab::ir
