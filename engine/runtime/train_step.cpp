#include "engine/runtime/train_step.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "engine/graph/init.h"
#include "engine/graph/lower.h"
#include "engine/ir/cast_folding.h"
#include "engine/ir/primitive.h"
#include "engine/util/error.h"
#include "engine/util/hash.h"

namespace shardlab::runtime {

using ir::Op;
using ir::ValueKind;

namespace {

// The dtype a parameter is stored in: its node's param_dtype (inside a Repeat, the block node's,
// then the Repeat's), else the project's.
DType param_dtype(const graph::NodeReport& n, const graph::ParamInfo& info, const project::PrecisionSpec& policy) {
  if (n.type == "Repeat") {
    const std::string inner = n.name + "/" + info.name.substr(0, info.name.find('/'));
    for (const graph::NodeReport& b : n.body)
      if (b.name == inner && b.param_dtype) return *b.param_dtype;
  }
  return n.param_dtype.value_or(policy.param_dtype);
}

std::vector<std::string> state_names(const project::OptimizerSpec& o) {
  if (o.type == "adam" || o.type == "adamw") return {"mu", "nu"};
  if (o.momentum != 0.0) return {"trace"};
  return {};
}

// Each update goes right after the last instruction that reads its parameter or writes its
// gradient, so gradients die early instead of all living until the end of the backward pass.
// Under dynamic loss scaling every update reads the step's non-finite count as well, so they all
// wait for every gradient: a step that overflowed anywhere changes nothing.
void append_updates(StepProgram& s, const project::OptimizerSpec& o) {
  ir::Program& p = s.program;
  std::vector<int> last_read(p.values.size(), -1);
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    for (int v : p.instrs[i].in) last_read[size_t(v)] = int(i);
    for (int v : p.instrs[i].out) last_read[size_t(v)] = int(i);
  }
  std::vector<std::pair<int, ir::Instr>> updates;
  for (ModelParam& mp : s.params) {
    ir::Instr ins;
    ins.op = update_op(o);
    ins.attrs = update_attrs(o);
    ins.in = {mp.value, mp.grad};
    ins.in.insert(ins.in.end(), mp.state.begin(), mp.state.end());
    if (s.nonfinite >= 0) {
      ins.in.push_back(s.nonfinite);
      ins.attrs.loss_scaled = true;
    }
    ins.node = mp.path;
    int after = std::max(last_read[size_t(mp.value)], last_read[size_t(mp.grad)]);
    if (s.nonfinite >= 0) after = std::max(after, last_read[size_t(s.nonfinite)]);
    updates.push_back({after, ins});
  }
  std::stable_sort(updates.begin(), updates.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<ir::Instr> merged;
  size_t u = 0;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    merged.push_back(p.instrs[i]);
    while (u < updates.size() && updates[u].first == int(i)) merged.push_back(updates[u++].second);
  }
  while (u < updates.size()) merged.push_back(updates[u++].second);
  p.instrs = std::move(merged);
}

// Moves each instruction from `first` on to just after the instruction that makes the latest of
// its operands (keeping their order otherwise), so a microbatch's gradient is summed, and dies,
// as soon as it is complete rather than after the whole backward pass. Only instructions from
// `from` on are reordered (one microbatch's), so M microbatches cost O(M) work, not O(M^2).
void place_after_operands(ir::Program& p, size_t from, size_t first) {
  std::unordered_map<int, size_t> made_at;  // value -> position in [from, first)
  for (size_t i = from; i < first; ++i)
    for (int v : p.instrs[i].out) made_at[v] = i - from;
  // Each moved instruction with how many of [from, first) go before it.
  std::vector<std::pair<size_t, ir::Instr>> moved;
  for (size_t i = first; i < p.instrs.size(); ++i) {
    size_t after = 0;
    for (int v : p.instrs[i].in)
      if (const auto it = made_at.find(v); it != made_at.end()) after = std::max(after, it->second + 1);
    moved.push_back({after, std::move(p.instrs[i])});
  }
  std::stable_sort(moved.begin(), moved.end(), [](auto& a, auto& b) { return a.first < b.first; });
  std::vector<ir::Instr> tail;
  tail.reserve(p.instrs.size() - from);
  size_t u = 0;
  for (size_t k = 0; k <= first - from; ++k) {
    while (u < moved.size() && moved[u].first == k) tail.push_back(std::move(moved[u++].second));
    if (k < first - from) tail.push_back(std::move(p.instrs[from + k]));
  }
  p.instrs.resize(from);
  for (ir::Instr& ins : tail) p.instrs.push_back(std::move(ins));
}

}  // namespace

ir::Op update_op(const project::OptimizerSpec& o) { return o.type == "sgd" ? Op::SgdUpdate : Op::AdamUpdate; }

ir::Attrs update_attrs(const project::OptimizerSpec& o) {
  ir::Attrs a;
  a.b1 = o.b1;
  a.b2 = o.b2;
  a.opt_eps = o.eps;
  a.weight_decay = o.type == "adamw" ? o.weight_decay : 0.0;
  a.momentum = o.momentum;
  a.nesterov = o.nesterov;
  return a;
}

StepProgram build_step(const project::Project& proj, const graph::GraphReport& report, int64_t batch, bool training) {
  if (!report.ok()) throw Error(proj.display_name() + ": " + report.errors.front());
  StepProgram s;
  s.batch = batch;
  ir::Program& p = s.program;

  // Parameters and optimizer state, in graph order (identical for training and evaluation).
  std::map<std::string, int> by_path;
  const auto states = state_names(proj.optimizer);
  for (const graph::NodeReport& n : report.nodes)
    for (const graph::ParamInfo& info : n.params) {
      if (!info.tied.empty()) {  // the earlier node's value itself: one parameter, one update
        by_path[n.name + "/" + info.name] = by_path.at(info.tied);
        continue;
      }
      ModelParam mp;
      mp.path = n.name + "/" + info.name;
      mp.info = info;
      mp.value = p.add_value(mp.path, info.shape, ValueKind::Param, info.axes, param_dtype(n, info, proj.precision));
      by_path[mp.path] = mp.value;
      s.params.push_back(mp);
    }
  for (ModelParam& mp : s.params)
    for (const std::string& st : states)
      mp.state.push_back(p.add_value(mp.path + "/" + st, mp.info.shape, ValueKind::OptState, mp.info.axes));

  const graph::NodeReport* in_node = nullptr;
  for (const graph::NodeReport& n : report.nodes)
    if (n.type == "Input") in_node = &n;
  auto flops_of = [&](size_t from, size_t to) {
    double f = 0;
    for (size_t i = from; i < to; ++i) {
      const ir::Instr& ins = p.instrs[i];
      std::vector<Shape> is, os;
      for (int v : ins.in) is.push_back(p.shape(v));
      for (int v : ins.out) os.push_back(p.shape(v));
      f += ir::primitive(ins.op).flops(is, os, ins.attrs);
    }
    return f;
  };

  // Gradient accumulation: M microbatches, each fed as its own input, each with its forward pass,
  // loss and backward pass before the next starts, so only one microbatch's activations are live
  // at a time. Each microbatch's loss is scaled by 1/M, so the summed gradients are their mean.
  const int64_t m_count = training ? std::max<int64_t>(proj.training.accumulate, 1) : 1;
  if (batch % m_count != 0)
    throw Error(proj.display_name() + ": training.accumulate: " + std::to_string(m_count) +
                " microbatches do not divide the batch size " + std::to_string(batch));
  s.microbatches = m_count;
  const int64_t micro = batch / m_count;
  std::vector<int> wrt;
  for (const ModelParam& mp : s.params) wrt.push_back(mp.value);
  std::vector<int> grads;
  int loss_sum = -1, accuracy_sum = -1;
  for (int64_t m = 0; m < m_count; ++m) {
    const std::string tag = m_count > 1 ? " (microbatch " + std::to_string(m + 1) + ")" : "";
    Shape in_shape = in_node->output.shape;
    in_shape[0] = micro;
    const int input = p.add_value("input:" + in_node->name + tag, in_shape, ValueKind::Input, in_node->output.axes);
    // Each microbatch draws its own dropout masks; the first keeps the whole batch's key.
    const uint64_t seed = m == 0 ? proj.training.seed : util::mix64(proj.training.seed ^ (uint64_t(m) << 40));
    const size_t forward_begin = p.instrs.size();
    const graph::LowerOptions lo{training, seed, "", m == 0 ? &s.activations : nullptr, proj.precision.dtype};
    // The loss and metrics read float32, as mixed-precision recipes cast the logits back.
    const int output = ir::convert_to(p,
                                      graph::lower_graph(p, proj.graph, report, input, [&](const std::string& path) { return by_path.at(path); },
                                                         proj.loss.output, lo),
                                      DType::F32, proj.loss.output);
    s.forward_flops += flops_of(forward_begin, p.instrs.size());

    const Shape& out = p.shape(output);
    int target = -1, loss = -1, accuracy = -1;
    if (proj.loss.type == "softmax_cross_entropy") {
      target = p.add_value("labels" + tag, Shape(out.begin(), out.end() - 1), ValueKind::Target, {}, DType::I32);
      loss = p.apply1(Op::SoftmaxXent, {output, target}, {}, "", "loss" + tag);
      accuracy = p.apply1(Op::Accuracy, {output, target}, {}, "", "accuracy" + tag);
    } else {
      target = p.add_value("targets" + tag, out, ValueKind::Target);
      loss = p.apply1(Op::Mse, {output, target}, {}, "", "loss" + tag);
    }
    if (m_count > 1) {
      ir::Attrs mean;
      mean.alpha = 1.0 / double(m_count);
      loss = p.apply1(Op::Scale, {loss}, mean, "", "loss" + tag + " / " + std::to_string(m_count));
      if (accuracy >= 0) accuracy = p.apply1(Op::Scale, {accuracy}, mean, "", "accuracy" + tag + " / " + std::to_string(m_count));
    }
    s.inputs.push_back(input);
    s.targets.push_back(target);
    if (m == 0) s.output = output;

    for (size_t k = forward_begin; k < p.instrs.size(); ++k) p.instrs[k].microbatch = m;
    if (training) {
      const size_t backward_begin = p.instrs.size();
      std::vector<int> g = ir::append_gradients(p, loss, wrt, forward_begin, proj.precision.loss_scale.has_value());
      size_t first_add = 0;
      if (m == 0) {
        grads = std::move(g);
      } else {
        first_add = p.instrs.size();
        for (size_t i = 0; i < g.size(); ++i)
          grads[i] = p.apply1(Op::Add, {grads[i], g[i]}, {}, s.params[i].path, "d_" + s.params[i].path + " (sum)");
      }
      for (size_t k = backward_begin; k < p.instrs.size(); ++k) {
        p.instrs[k].microbatch = m;
        p.instrs[k].backward = true;
      }
      if (m > 0) place_after_operands(p, forward_begin, first_add);
    }
    const size_t sums_begin = p.instrs.size();
    loss_sum = loss_sum < 0 ? loss : p.apply1(Op::Add, {loss_sum, loss}, {}, "", "loss");
    if (accuracy >= 0) accuracy_sum = accuracy_sum < 0 ? accuracy : p.apply1(Op::Add, {accuracy_sum, accuracy}, {}, "", "accuracy");
    for (size_t k = sums_begin; k < p.instrs.size(); ++k) p.instrs[k].microbatch = m;
  }
  s.input = s.inputs.front();
  s.target = s.targets.front();
  s.loss = loss_sum;
  s.accuracy = accuracy_sum;

  std::map<int, int> moved;
  ir::fold_casts(p, &moved);
  for (auto& [node, v] : s.activations)
    if (const auto it = moved.find(v); it != moved.end()) v = it->second;
  if (training) {
    for (size_t i = 0; i < grads.size(); ++i) s.params[i].grad = grads[i];
    if (proj.precision.loss_scale && !s.params.empty()) {
      // Each gradient is counted in its update's layout: that of its first state, else its parameter's.
      std::vector<int> pairs;
      for (const ModelParam& mp : s.params) pairs.insert(pairs.end(), {mp.grad, mp.state.empty() ? mp.value : mp.state.front()});
      s.nonfinite = p.apply1(Op::CountNonFinite, pairs, {}, "", "non-finite gradient elements");
    }
    append_updates(s, proj.optimizer);
  }
  // jax.default_matmul_precision: every product of the step, the backward pass's included.
  for (ir::Instr& ins : p.instrs)
    if (ins.op == Op::MatMul || ins.op == Op::BatchMatMul) ins.attrs.precision = proj.precision.matmul_precision;
  s.step_flops = flops_of(0, p.instrs.size());
  std::vector<int> keep{s.loss};
  if (s.accuracy >= 0) keep.push_back(s.accuracy);
  if (s.nonfinite >= 0) keep.push_back(s.nonfinite);
  s.memory = plan::plan_memory(p, keep);
  return s;
}

void initialize_param(const ModelParam& mp, uint64_t seed, float* out) {
  const graph::ParamInfo& info = mp.info;
  const Shape one = info.layers > 0 ? Shape(info.shape.begin() + 1, info.shape.end()) : info.shape;
  graph::initialize(out, one, std::max<int64_t>(info.layers, 1), info.init, mp.path, seed);
}

const ModelParam& find_param(const StepProgram& s, const std::string& path) {
  for (const ModelParam& mp : s.params)
    if (mp.path == path) return mp;
  throw Error("the model has no parameter '" + path + "'");
}

std::vector<std::string> param_paths(const StepProgram& s) {
  std::vector<std::string> out;
  for (const ModelParam& mp : s.params) out.push_back(mp.path);
  return out;
}


}  // namespace shardlab::runtime
