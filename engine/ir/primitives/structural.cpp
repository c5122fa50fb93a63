// Primitives that move or create data without arithmetic: reshape, stacking the per-layer
// parameters of a Repeat block along its leading 'layer' axis, and constant fills.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {
double no_flops(const std::vector<Shape>&, const std::vector<Shape>&, const Attrs&) { return 0.0; }
}  // namespace

void register_structural(std::vector<Primitive>& t) {
  Primitive reshape;
  reshape.op = Op::Reshape;
  reshape.name = "reshape";
  reshape.num_inputs = 1;
  reshape.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    if (numel(in[0]) != numel(a.shape))
      throw Error("cannot reshape " + shape_str(in[0]) + " to " + shape_str(a.shape));
    return std::vector<Shape>{a.shape};
  };
  reshape.flops = no_flops;
  reshape.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{reshape_to(p, *ct[0], p.shape(ins.in[0]), ins.node)};
  };
  t.push_back(reshape);

  Primitive stack;
  stack.op = Op::Stack;
  stack.name = "stack";
  stack.num_inputs = -1;
  stack.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in.empty()) throw Error("needs at least one operand");
    for (const Shape& s : in)
      if (s != in[0]) throw Error("operands differ: " + shape_str(in[0]) + " vs " + shape_str(s));
    Shape out{int64_t(in.size())};
    out.insert(out.end(), in[0].begin(), in[0].end());
    return std::vector<Shape>{out};
  };
  stack.flops = no_flops;
  stack.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    std::vector<int> parts = p.apply(Op::Unstack, {*ct[0]}, {}, ins.node);
    Cotangents r(ins.in.size());
    for (size_t i = 0; i < r.size(); ++i)
      if (needs[i]) r[i] = parts[i];
    return r;
  };
  t.push_back(stack);

  Primitive unstack;
  unstack.op = Op::Unstack;
  unstack.name = "unstack";
  unstack.num_inputs = 1;
  unstack.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in[0].empty()) throw Error("needs rank >= 1");
    Shape part(in[0].begin() + 1, in[0].end());
    return std::vector<Shape>(size_t(in[0][0]), part);
  };
  unstack.flops = no_flops;
  unstack.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    std::vector<int> parts;
    for (size_t i = 0; i < ct.size(); ++i) {
      if (ct[i]) {
        parts.push_back(*ct[i]);
      } else {  // a layer whose slice did not reach the loss contributes zeros
        Attrs zero;
        zero.alpha = 0.0;
        zero.shape = p.shape(ins.out[i]);
        parts.push_back(p.apply1(Op::Fill, {}, zero, ins.node));
      }
    }
    return Cotangents{p.apply1(Op::Stack, parts, {}, ins.node)};
  };
  t.push_back(unstack);

  Primitive fill;
  fill.op = Op::Fill;
  fill.name = "fill";
  fill.num_inputs = 0;
  fill.shapes = [](const std::vector<Shape>&, const Attrs& a) { return std::vector<Shape>{a.shape}; };
  fill.flops = no_flops;
  fill.vjp = [](Program&, const Instr&, const Cotangents&, const std::vector<bool>&) { return Cotangents{}; };
  t.push_back(fill);
}

}  // namespace shardlab::ir
