// Optimizer updates as primitives, so the training step is one program. They update the parameter
// and its state in place (like donated buffers under jit) and produce no new values.
#include "engine/ir/primitives/common.h"

namespace shardlab::ir {

namespace {

// The gradient is brought to its parameter's layout (a pending sum is reduce-scattered where the
// parameter is split, all-reduced where it is not); the state shares the parameter's layout.
void update_rule(PartitionContext& c, const Instr& ins) {
  const Layout& ps = c.layout(ins.in[0]);
  std::vector<int> ops;
  for (size_t k = 0; k < ins.in.size(); ++k) ops.push_back(c.reshard(ins.in[k], k == 1 ? ps : c.layout(ins.in[k]), ins.node));
  c.apply(ins.op, ops, ins.attrs, ins.node);
}

}  // namespace

void register_optimizers(std::vector<Primitive>& t) {
  auto all_same = [](const std::vector<Shape>& in, const Attrs& a) {
    same_shape_as_first(in, a);
    return std::vector<Shape>{};
  };
  Primitive sgd;  // (param, grad) or (param, grad, trace) with momentum
  sgd.op = Op::SgdUpdate;
  sgd.name = "sgd_update";
  sgd.num_inputs = -1;
  sgd.shapes = all_same;
  sgd.partition = update_rule;
  sgd.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 4.0 * double(numel(in[0])); };
  t.push_back(sgd);

  Primitive adam;  // (param, grad, mu, nu)
  adam.op = Op::AdamUpdate;
  adam.name = "adam_update";
  adam.num_inputs = 4;
  adam.shapes = all_same;
  adam.partition = update_rule;
  adam.flops = [](const std::vector<Shape>& in, const std::vector<Shape>&, const Attrs&) { return 12.0 * double(numel(in[0])); };
  t.push_back(adam);
}

}  // namespace shardlab::ir
