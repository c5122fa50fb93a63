#include "engine/profiler/instruction_arrays.h"

#include <algorithm>

#include "engine/ir/primitive.h"

namespace shardlab::profiler {

namespace {

bool is_update(ir::Op op) { return op == ir::Op::AdamUpdate || op == ir::Op::SgdUpdate; }
bool is_loss(ir::Op op) { return op == ir::Op::SoftmaxXent || op == ir::Op::Mse; }

void add_unique(std::vector<std::string>& list, const std::string& name) {
  if (!name.empty() && std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
}

}  // namespace

std::vector<std::string> value_arrays(const ir::Program& p) {
  const size_t n = p.values.size();
  std::vector<std::string> name(n);
  std::vector<int> producer(n, -1);
  for (size_t i = 0; i < p.instrs.size(); ++i)
    for (int v : p.instrs[i].out) producer[size_t(v)] = int(i);

  // Persistent state and the fed input are arrays by their own names (build_step names them).
  const std::string input_prefix = "input:";
  for (size_t v = 0; v < n; ++v) {
    const ir::Value& val = p.values[v];
    if (val.kind == ir::ValueKind::Param || val.kind == ir::ValueKind::OptState) name[v] = val.name;
    else if (val.kind == ir::ValueKind::Input)
      name[v] = val.name.rfind(input_prefix, 0) == 0 ? val.name.substr(input_prefix.size()) : val.name;
  }

  // The forward pass ends with the loss; what comes after is its gradient and the update.
  size_t forward_end = p.instrs.size();
  for (size_t i = 0; i < p.instrs.size(); ++i)
    if (is_loss(p.instrs[i].op)) {
      forward_end = i;
      break;
    }

  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const ir::Instr& ins = p.instrs[i];
    // A Repeat's per-layer slices of a stacked parameter are that parameter.
    if (ins.op == ir::Op::Unstack && !ins.in.empty() && !name[size_t(ins.in[0])].empty())
      for (int v : ins.out) name[size_t(v)] = name[size_t(ins.in[0])];
    // An update reads (parameter, gradient, state...).
    if (is_update(ins.op) && ins.in.size() >= 2 && !name[size_t(ins.in[0])].empty() && name[size_t(ins.in[1])].empty())
      name[size_t(ins.in[1])] = "d_" + name[size_t(ins.in[0])];
  }

  // Activations: a forward value of node N that an instruction of another node (or the loss) reads
  // is N's output. Inside a node (a matmul before its bias) a value is read by the node alone.
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const ir::Instr& reader = p.instrs[i];
    for (int v : reader.in) {
      const int at = producer[size_t(v)];
      if (at < 0 || size_t(at) >= forward_end || !name[size_t(v)].empty()) continue;
      const std::string& node = p.instrs[size_t(at)].node;
      if (!node.empty() && reader.node != node) name[size_t(v)] = node;
    }
  }

  // Backwards from the update: the gradient it reads may be a collective's result (a reduction
  // over the batch's devices) or a Repeat's stack of per-layer gradients; those operands are the
  // same gradient. Forwards and backwards through collectives: a collective moves one array.
  for (size_t i = p.instrs.size(); i-- > 0;) {
    const ir::Instr& ins = p.instrs[i];
    if (ins.out.empty() || name[size_t(ins.out[0])].empty()) continue;
    const std::string& out = name[size_t(ins.out[0])];
    const bool grad = out.rfind("d_", 0) == 0;
    if (ir::is_collective(ins.op) || (grad && ins.op == ir::Op::Stack))
      for (int v : ins.in)
        if (name[size_t(v)].empty() && p.values[size_t(v)].kind == ir::ValueKind::Temp) name[size_t(v)] = out;
  }
  for (const ir::Instr& ins : p.instrs)
    if (ir::is_collective(ins.op) && !ins.in.empty() && !name[size_t(ins.in[0])].empty())
      for (int v : ins.out)
        if (name[size_t(v)].empty()) name[size_t(v)] = name[size_t(ins.in[0])];
  return name;
}

std::vector<SpanArrays> instruction_arrays(const ir::Program& p) {
  const std::vector<std::string> name = value_arrays(p);
  std::vector<SpanArrays> out(p.instrs.size());
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const ir::Instr& ins = p.instrs[i];
    for (int v : ins.in) add_unique(out[i].reads, name[size_t(v)]);
    for (int v : ins.out) add_unique(out[i].writes, name[size_t(v)]);
    // An update writes its parameter and state in place, an in-place gather its operand (neither
    // has results of its own).
    if (is_update(ins.op))
      for (size_t k = 0; k < ins.in.size(); ++k)
        if (k != 1) add_unique(out[i].writes, name[size_t(ins.in[k])]);
    if (ins.op == ir::Op::AllGatherInPlace && !ins.in.empty()) add_unique(out[i].writes, name[size_t(ins.in[0])]);
  }
  return out;
}

Category instruction_category(ir::Op op) {
  if (ir::is_collective(op)) return Category::Collective;
  if (op == ir::Op::AdamUpdate || op == ir::Op::SgdUpdate) return Category::Optimizer;
  return Category::Compute;
}

double instruction_flops(const ir::Program& p, const ir::Instr& ins) {
  std::vector<Shape> is, os;
  for (int v : ins.in) is.push_back(p.shape(v));
  for (int v : ins.out) os.push_back(p.shape(v));
  return ir::primitive(ins.op).flops(is, os, ins.attrs);
}

}  // namespace shardlab::profiler
