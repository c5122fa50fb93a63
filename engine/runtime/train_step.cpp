#include "engine/runtime/train_step.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "engine/graph/init.h"
#include "engine/graph/lower.h"
#include "engine/ir/primitive.h"
#include "engine/util/error.h"

namespace shardlab::runtime {

using ir::Op;
using ir::ValueKind;

namespace {

std::vector<std::string> state_names(const project::OptimizerSpec& o) {
  if (o.type == "adam" || o.type == "adamw") return {"mu", "nu"};
  if (o.momentum != 0.0) return {"trace"};
  return {};
}

// Each update goes right after the last instruction that reads its parameter or writes its
// gradient, so gradients die early instead of all living until the end of the backward pass.
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
    ins.op = o.type == "sgd" ? Op::SgdUpdate : Op::AdamUpdate;
    ins.in = {mp.value, mp.grad};
    ins.in.insert(ins.in.end(), mp.state.begin(), mp.state.end());
    ins.attrs.b1 = o.b1;
    ins.attrs.b2 = o.b2;
    ins.attrs.opt_eps = o.eps;
    ins.attrs.weight_decay = o.type == "adamw" ? o.weight_decay : 0.0;
    ins.attrs.momentum = o.momentum;
    ins.attrs.nesterov = o.nesterov;
    ins.node = mp.path;
    updates.push_back({std::max(last_read[size_t(mp.value)], last_read[size_t(mp.grad)]), ins});
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

}  // namespace

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
      ModelParam mp;
      mp.path = n.name + "/" + info.name;
      mp.info = info;
      mp.value = p.add_value(mp.path, info.shape, ValueKind::Param, info.axes);
      by_path[mp.path] = mp.value;
      s.params.push_back(mp);
    }
  for (ModelParam& mp : s.params)
    for (const std::string& st : states)
      mp.state.push_back(p.add_value(mp.path + "/" + st, mp.info.shape, ValueKind::OptState, mp.info.axes));

  const graph::NodeReport* in_node = nullptr;
  for (const graph::NodeReport& n : report.nodes)
    if (n.type == "Input") in_node = &n;
  Shape in_shape = in_node->output.shape;
  in_shape[0] = batch;
  s.input = p.add_value("input:" + in_node->name, in_shape, ValueKind::Input, in_node->output.axes);

  const graph::LowerOptions lo{training, proj.training.seed, "", &s.activations};
  s.output = graph::lower_graph(p, proj.graph, report, s.input, [&](const std::string& path) { return by_path.at(path); },
                                proj.loss.output, lo);
  const size_t forward_end = p.instrs.size();

  const Shape& out = p.shape(s.output);
  if (proj.loss.type == "softmax_cross_entropy") {
    s.target = p.add_value("labels", Shape(out.begin(), out.end() - 1), ValueKind::Target);
    s.loss = p.apply1(Op::SoftmaxXent, {s.output, s.target}, {}, "", "loss");
    s.accuracy = p.apply1(Op::Accuracy, {s.output, s.target}, {}, "", "accuracy");
  } else {
    s.target = p.add_value("targets", out, ValueKind::Target);
    s.loss = p.apply1(Op::Mse, {s.output, s.target}, {}, "", "loss");
  }
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
  s.forward_flops = flops_of(0, forward_end);

  if (training) {
    std::vector<int> wrt;
    for (const ModelParam& mp : s.params) wrt.push_back(mp.value);
    std::vector<int> grads = ir::append_gradients(p, s.loss, wrt);
    for (size_t i = 0; i < grads.size(); ++i) s.params[i].grad = grads[i];
    append_updates(s, proj.optimizer);
  }
  s.step_flops = flops_of(0, p.instrs.size());
  std::vector<int> keep{s.loss};
  if (s.accuracy >= 0) keep.push_back(s.accuracy);
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
