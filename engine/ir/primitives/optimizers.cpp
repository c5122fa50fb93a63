// Optimizer updates as primitives, so the training step is one program. They update the parameter
// and its state in place (like donated buffers under jit) and produce no new values. Under dynamic
// loss scaling (attrs.loss_scaled) each reads one more operand, the step's count of non-finite
// gradient elements (CountNonFinite), and leaves everything as it was where that is not 0.
#include <map>
#include <set>

#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

// The gradient is brought to its state's layout: a pending sum is reduce-scattered where the state
// is split, all-reduced where it is not. Where the state is its parameter's layout further split
// over the batch's mesh axes (engine/sharding/weight_update.h), each device updates only its block
// of the parameter, and an in-place gather then gives every device the whole updated parameter.
void update_rule(PartitionContext& c, const Instr& ins) {
  const Layout& ps = c.layout(ins.in[0]);
  const size_t states = ins.in.size() - (ins.attrs.loss_scaled ? 3 : 2);
  const Layout& us = states > 0 ? c.layout(ins.in[2]) : ps;
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

// Operands after the parameter are the parameter's shape, or with a sharded update its block; a
// loss-scaled update's last is the non-finite count, a scalar.
std::vector<Shape> update_shapes(const std::vector<Shape>& in, const Attrs& a) {
  Shape block = in.at(0);
  if (a.group_size > 1) {
    if (a.dim < 0 || size_t(a.dim) >= block.size() || block[size_t(a.dim)] % a.group_size != 0)
      throw Error("a sharded update of " + shape_str(block) + " cannot split dimension " + std::to_string(a.dim) + " into " +
                  std::to_string(a.group_size));
    block[size_t(a.dim)] /= a.group_size;
  }
  const size_t n = in.size() - (a.loss_scaled ? 1 : 0);
  if (a.loss_scaled && numel(in.back()) != 1) throw Error("the non-finite count " + shape_str(in.back()) + " is not a scalar");
  for (size_t i = 1; i < n; ++i)
    if (in[i] != block) throw Error("operands have different shapes " + shape_str(block) + " and " + shape_str(in[i]));
  return {};
}

// The parameter may be any float type (param_dtype) and its gradient is the same; the optimizer's
// state is float32 whatever the parameter is, as Optax keeps it under mixed precision.
std::vector<DType> update_dtypes(const std::vector<DType>& in, const Attrs& a) {
  if (!is_float(in[0])) throw Error(std::string("the parameter is ") + dtype_name(in[0]));
  if (in[1] != in[0]) throw Error(std::string("the gradient is ") + dtype_name(in[1]) + ", its parameter " + dtype_name(in[0]));
  const size_t n = in.size() - (a.loss_scaled ? 1 : 0);
  for (size_t i = 2; i < n; ++i)
    if (in[i] != DType::F32) throw Error(std::string("optimizer state is ") + dtype_name(in[i]) + ", not float32");
  return {};
}

// CountNonFinite(g_1, like_1, g_2, like_2, ...): each gradient is counted in the layout its update
// reads it in (that of `like_i`, the update's state or parameter), so the reductions it needs are
// the ones the update would insert anyway and are shared with it. Gradients split over the same mesh
// axes are counted together and their count summed over those axes (a device holding a copy of a
// block another also holds is not counted twice); the groups' counts are then added.
void count_rule(PartitionContext& c, const Instr& ins) {
  std::map<std::set<std::string>, std::vector<int>> by_axes;
  for (size_t k = 0; k + 1 < ins.in.size(); k += 2) {
    const Layout to = c.layout(ins.in[k + 1]).without_partial();
    std::set<std::string> axes;
    for (const auto& d : to.dims) axes.insert(d.begin(), d.end());
    std::vector<int>& ops = by_axes[axes];
    ops.push_back(c.reshard(ins.in[k], to, ins.node));
    ops.push_back(c.reshard(ins.in[k + 1], c.layout(ins.in[k + 1]), ins.node));
  }
  int total = -1;
  for (const auto& [axes, ops] : by_axes) {
    int n = c.apply(Op::CountNonFinite, ops, ins.attrs, ins.node, c.name(ins.out[0]));
    if (!axes.empty()) n = c.all_reduce(n, std::vector<std::string>(axes.begin(), axes.end()), ins.node, c.name(ins.out[0]));
    total = total < 0 ? n : c.apply(Op::Add, {total, n}, {}, ins.node, c.name(ins.out[0]));
  }
  c.define(ins.out[0], total, Layout::replicated(0));
}

}  // namespace

void register_optimizers(std::vector<Primitive>& t) {
  Primitive sgd;  // (param, grad) or (param, grad, trace) with momentum
  sgd.op = Op::SgdUpdate;
  sgd.name = "sgd_update";
  sgd.num_inputs = -1;
  sgd.shapes = update_shapes;
  sgd.dtypes = update_dtypes;
  sgd.partition = update_rule;
  sgd.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 4.0 * double(numel(in[1])); };
  t.push_back(sgd);

  Primitive adam;  // (param, grad, mu, nu)
  adam.op = Op::AdamUpdate;
  adam.name = "adam_update";
  adam.num_inputs = -1;  // 4, or 5 loss-scaled
  adam.shapes = update_shapes;
  adam.dtypes = update_dtypes;
  adam.partition = update_rule;
  adam.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 12.0 * double(numel(in[1])); };
  t.push_back(adam);

  Primitive count;
  count.op = Op::CountNonFinite;
  count.name = "count_non_finite";
  count.num_inputs = -1;
  count.shapes = [](const std::vector<Shape>& in, const Attrs&) {
    if (in.size() % 2 != 0) throw Error("needs pairs of a gradient and the value whose layout it is read in");
    return std::vector<Shape>{Shape{}};
  };
  count.dtypes = [](const std::vector<DType>&, const Attrs&) { return std::vector<DType>{DType::F32}; };
  count.partition = count_rule;
  count.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) {
    double n = 0;
    for (size_t k = 0; k < in.size(); k += 2) n += double(numel(in[k]));
    return n;
  };
  t.push_back(count);
}

}  // namespace shardlab::ir
