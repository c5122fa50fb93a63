// Optimizer updates as primitives, so the training step is one program. They update the parameter
// and its state in place (like donated buffers under jit) and produce no new values.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

// The gradient is brought to its state's layout: a pending sum is reduce-scattered where the state
// is split, all-reduced where it is not. Where the state is its parameter's layout further split
// over the batch's mesh axes (engine/sharding/weight_update.h), each device updates only its block
// of the parameter, and an in-place gather then gives every device the whole updated parameter.
void update_rule(PartitionContext& c, const Instr& ins) {
  const Layout& ps = c.layout(ins.in[0]);
  const Layout& us = ins.in.size() > 2 ? c.layout(ins.in[2]) : ps;
  std::vector<int> ops;
  for (size_t k = 0; k < ins.in.size(); ++k)
    ops.push_back(c.reshard(ins.in[k], k == 1 ? us : c.layout(ins.in[k]), ins.node));
  if (us == ps) {
    c.apply(ins.op, ops, ins.attrs, ins.node);
    return;
  }
  Attrs a = ins.attrs;
  a.dim = -1;
  for (size_t d = 0; d < ps.dims.size(); ++d)
    if (us.dims[d] != ps.dims[d]) {
      if (a.dim >= 0 || !ps.dims[d].empty() || !ps.partial.empty())
        throw Error("internal: the state of '" + c.name(ins.in[0]) + "' is not its parameter's layout split along one more dimension");
      a.dim = int64_t(d);
      a.mesh_axes = us.dims[d];
    }
  a.group_size = c.group_size(a.mesh_axes);
  c.apply(ins.op, ops, a, ins.node);
  c.gather_in_place(ops[0], a.mesh_axes, a.dim, ins.node, c.name(ins.in[0]));
}

// Operands after the parameter are the parameter's shape, or with a sharded update its block.
std::vector<Shape> update_shapes(const std::vector<Shape>& in, const Attrs& a) {
  Shape block = in.at(0);
  if (a.group_size > 1) {
    if (a.dim < 0 || size_t(a.dim) >= block.size() || block[size_t(a.dim)] % a.group_size != 0)
      throw Error("a sharded update of " + shape_str(block) + " cannot split dimension " + std::to_string(a.dim) + " into " +
                  std::to_string(a.group_size));
    block[size_t(a.dim)] /= a.group_size;
  }
  for (size_t i = 1; i < in.size(); ++i)
    if (in[i] != block) throw Error("operands have different shapes " + shape_str(block) + " and " + shape_str(in[i]));
  return {};
}

}  // namespace

void register_optimizers(std::vector<Primitive>& t) {
  Primitive sgd;  // (param, grad) or (param, grad, trace) with momentum
  sgd.op = Op::SgdUpdate;
  sgd.name = "sgd_update";
  sgd.num_inputs = -1;
  sgd.shapes = update_shapes;
  sgd.partition = update_rule;
  sgd.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 4.0 * double(numel(in[1])); };
  t.push_back(sgd);

  Primitive adam;  // (param, grad, mu, nu)
  adam.op = Op::AdamUpdate;
  adam.name = "adam_update";
  adam.num_inputs = 4;
  adam.shapes = update_shapes;
  adam.partition = update_rule;
  adam.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 12.0 * double(numel(in[1])); };
  t.push_back(adam);
}

}  // namespace shardlab::ir
