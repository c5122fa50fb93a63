// Elementwise primitives and their derivatives. Activation VJPs read the activation's output where
// the derivative allows it (relu, tanh), so the pre-activation can be freed early.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

void unary_rule(PartitionContext& c, const Instr& ins);
void binary_rule(PartitionContext& c, const Instr& ins);

Primitive ew(Op op, const char* name, int n) {
  Primitive p;
  p.op = op;
  p.name = name;
  p.num_inputs = n;
  p.shapes = same_shape_as_first;
  p.flops = elementwise_flops;
  p.partition = n == 1 ? PartitionRule(unary_rule) : PartitionRule(binary_rule);
  return p;
}

int scale(Program& p, int v, double alpha, const std::string& node) {
  Attrs a;
  a.alpha = alpha;
  return p.apply1(Op::Scale, {v}, a, node);
}

// Sharding rules. Unary: the result is laid out like the operand, whose pending sums are
// resolved first (relu(a) + relu(b) is not relu(a + b)).
void unary_rule(PartitionContext& c, const Instr& ins) {
  Layout s = c.layout(ins.in[0]).without_partial();
  c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {s}, ins.attrs);
}

// Binary: the second operand follows the first (for the gradient ops, the first follows the
// gradient); pending sums are resolved, except that two equal ones may be added as they are.
void binary_rule(PartitionContext& c, const Instr& ins) {
  const Layout& a = c.layout(ins.in[0]);
  const bool linear = ins.op == Op::Add || ins.op == Op::Sub;
  if (linear && !a.partial.empty() && a == c.layout(ins.in[1])) {
    c.produce(ins, {c.reshard(ins.in[0], a, ins.node), c.reshard(ins.in[1], a, ins.node)}, {a}, ins.attrs);
    return;
  }
  Layout s = c.layout(ins.in[linear ? 0 : 1]).without_partial();
  c.produce(ins, {c.reshard(ins.in[0], s, ins.node), c.reshard(ins.in[1], s, ins.node)}, {s}, ins.attrs);
}

}  // namespace

void register_elementwise(std::vector<Primitive>& t) {
  Primitive add = ew(Op::Add, "add", 2);
  add.vjp = [](Program&, const Instr&, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{ct[0], ct[0]};
  };
  t.push_back(add);

  Primitive sub = ew(Op::Sub, "sub", 2);
  sub.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    return Cotangents{ct[0], needs[1] ? std::optional<int>(scale(p, *ct[0], -1.0, ins.node)) : std::nullopt};
  };
  t.push_back(sub);

  Primitive mul = ew(Op::Mul, "mul", 2);
  mul.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Cotangents r(2);
    if (needs[0]) r[0] = p.apply1(Op::Mul, {*ct[0], ins.in[1]}, {}, ins.node);
    if (needs[1]) r[1] = p.apply1(Op::Mul, {*ct[0], ins.in[0]}, {}, ins.node);
    return r;
  };
  t.push_back(mul);

  Primitive sc = ew(Op::Scale, "scale", 1);
  sc.partition = [](PartitionContext& c, const Instr& ins) {  // linear: pending sums pass through
    const Layout& s = c.layout(ins.in[0]);
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {s}, ins.attrs);
  };
  sc.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{scale(p, *ct[0], ins.attrs.alpha, ins.node)};
  };
  t.push_back(sc);

  Primitive relu = ew(Op::Relu, "relu", 1);
  relu.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::ReluGrad, {ins.out[0], *ct[0]}, {}, ins.node)};
  };
  t.push_back(relu);

  // relu_grad(y, g) = g * (y > 0): linear in g, piecewise constant in y.
  Primitive relu_grad = ew(Op::ReluGrad, "relu_grad", 2);
  relu_grad.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Cotangents r(2);
    if (needs[1]) r[1] = p.apply1(Op::ReluGrad, {ins.in[0], *ct[0]}, {}, ins.node);
    return r;
  };
  t.push_back(relu_grad);

  Primitive gelu = ew(Op::Gelu, "gelu", 1);  // tanh approximation, Flax's nn.gelu default
  gelu.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::GeluGrad, {ins.in[0], *ct[0]}, {}, ins.node)};
  };
  t.push_back(gelu);
  t.push_back(ew(Op::GeluGrad, "gelu_grad", 2));  // backward only

  Primitive tanh_ = ew(Op::Tanh, "tanh", 1);
  tanh_.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::TanhGrad, {ins.out[0], *ct[0]}, {}, ins.node)};
  };
  t.push_back(tanh_);

  // tanh_grad(y, g) = g * (1 - y^2)
  Primitive tanh_grad = ew(Op::TanhGrad, "tanh_grad", 2);
  tanh_grad.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>& needs) {
    Cotangents r(2);
    const int y = ins.in[0], g = ins.in[1], gg = *ct[0];
    if (needs[0]) r[0] = p.apply1(Op::Mul, {p.apply1(Op::Mul, {gg, g}, {}, ins.node), scale(p, y, -2.0, ins.node)}, {}, ins.node);
    if (needs[1]) r[1] = p.apply1(Op::TanhGrad, {y, gg}, {}, ins.node);
    return r;
  };
  t.push_back(tanh_grad);

  Primitive sigmoid = ew(Op::Sigmoid, "sigmoid", 1);
  sigmoid.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::SigmoidGrad, {ins.out[0], *ct[0]}, {}, ins.node)};
  };
  t.push_back(sigmoid);
  // sigmoid_grad(y, g) = g * y * (1 - y); backward only
  t.push_back(ew(Op::SigmoidGrad, "sigmoid_grad", 2));

  // Inverted dropout; the mask is a pure function of (seed, step, element), so the VJP regenerates it.
  Primitive dropout = ew(Op::Dropout, "dropout", 1);
  // Its mask is indexed by global element: each device masks its own block, told where the block
  // sits in the whole array.
  dropout.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = c.layout(ins.in[0]).without_partial();
    Attrs a = ins.attrs;
    a.shape = c.shape(ins.in[0]);
    a.layout = s.dims;
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {s}, a);
  };
  dropout.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{p.apply1(Op::Dropout, {*ct[0]}, ins.attrs, ins.node)};
  };
  t.push_back(dropout);

  // Mixed precision's cast (Flax's promote_dtype, .astype): rounds to nearest even. Linear up to
  // that rounding, so pending sums pass through and are reduced where a reader needs them. Its
  // VJP casts the cotangent back, so a parameter kept in float32 gets a float32 gradient.
  Primitive convert = ew(Op::Convert, "convert", 1);
  convert.dtypes = [](const std::vector<DType>&, const Attrs& a) { return std::vector<DType>{a.dtype}; };
  convert.partition = sc.partition;
  convert.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    return Cotangents{convert_to(p, *ct[0], p.dtype(ins.in[0]), ins.node)};
  };
  t.push_back(convert);
}

}  // namespace shardlab::ir
