// Rotary position embedding (RoPE) as Llama applies it to queries and keys: a rotation of each
// pair of features (i, i + d/2) by an angle that grows with the position. A rotation is linear and
// orthogonal, so its VJP is the rotation back.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

void register_rotary(std::vector<Primitive>& t) {
  Primitive rope;
  rope.op = Op::Rope;
  rope.name = "rope";
  rope.num_inputs = 1;
  rope.shapes = [](const std::vector<Shape>& in, const Attrs& a) {
    const Shape& x = in[0];
    if (x.size() < 2 || a.dim < 0 || a.dim + 1 >= int64_t(x.size()))
      throw Error("needs a position dim before the features, got dim " + std::to_string(a.dim) + " of " + shape_str(x));
    if (x.back() % 2) throw Error("the features (" + std::to_string(x.back()) + ") must be even: they turn in pairs");
    return std::vector<Shape>{x};
  };
  rope.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 3.0 * double(numel(in[0])); };
  // A device needs every feature of a pair and the positions of its elements: the position dim
  // and the features stay whole; the others keep their splits. Linear: a pending sum stays pending.
  rope.partition = [](PartitionContext& c, const Instr& ins) {
    Layout s = c.layout(ins.in[0]);
    s.dims[size_t(ins.attrs.dim)].clear();
    s.dims.back().clear();
    c.produce(ins, {c.reshard(ins.in[0], s, ins.node)}, {s}, ins.attrs);
  };
  rope.vjp = [](Program& p, const Instr& ins, const Cotangents& ct, const std::vector<bool>&) {
    Attrs back = ins.attrs;
    back.rope_inverse = !back.rope_inverse;
    return Cotangents{p.apply1(Op::Rope, {*ct[0]}, back, ins.node)};
  };
  t.push_back(rope);
}

}  // namespace shardlab::ir
