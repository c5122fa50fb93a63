// Primitives that broadcast a row vector over, or reduce over, all leading dimensions:
// bias add, per-feature scale, their gradients, and layer normalisation over the last axis.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

std::vector<Shape> row_broadcast(const std::vector<Shape>& in, const Attrs&) {
  if (in[0].empty() || in[1] != Shape{in[0].back()})
    throw Error("row operand " + shape_str(in[1]) + " does not match the last dimension of " + shape_str(in[0]));
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
  reduce.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    Attrs zero;
    zero.alpha = 0.0;
    zero.shape = p.shape(ins.in[0]);
    int z = p.apply1(Op::Fill, {}, zero, ins.node);
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
  ln_grad.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 10.0 * double(numel(in[0])); };
  t.push_back(ln_grad);
}

}  // namespace shardlab::ir
