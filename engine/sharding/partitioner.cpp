#include "engine/sharding/partitioner.h"

#include <atomic>
#include <algorithm>
#include <map>
#include <set>

#include "engine/ir/primitive.h"
#include "engine/sharding/weight_update.h"
#include "engine/util/error.h"

namespace shardlab::sharding {

using ir::Op;
using ir::ValueKind;

namespace {

// A step built by hand (the rule tests) names only its one input and target.
std::vector<int> inputs_of(const runtime::StepProgram& g) { return g.inputs.empty() ? std::vector<int>{g.input} : g.inputs; }
std::vector<int> targets_of(const runtime::StepProgram& g) { return g.targets.empty() ? std::vector<int>{g.target} : g.targets; }

class Partitioner : public ir::PartitionContext {
 public:
  Partitioner(const runtime::StepProgram& g, const Mesh& mesh, const LogicalRules& rules, Fallback fallback, WeightUpdate update,
              PipelineSchedule schedule)
      : global_(g), mesh_(mesh), rules_(rules), fallback_(fallback), update_(update) {
    out_.local.assign(g.program.values.size(), -1);
    out_.sharding.assign(g.program.values.size(), {});
    // Pipeline stages split Repeats' layers: a program without any runs unpipelined.
    if (std::any_of(g.program.instrs.begin(), g.program.instrs.end(), [](const ir::Instr& i) { return i.layers > 0; }))
      out_.pipeline = pipeline_of(rules, mesh);
    out_.schedule = schedule;
    out_.microbatches = g.microbatches;
  }

  PartitionedStep run() {
    const Pipeline& pipe = out_.pipeline;
    if (pipe.on()) {
      if (global_.nonfinite >= 0)
        throw Error("dynamic loss scaling (float16) does not run with pipeline stages (layer=" + pipe.axis +
                    ") yet: use bfloat16, turn precision.loss_scale off, or map layer to None");
      stage_of_ = assign_stages(global_.program, pipe.stages, pipe.axis);
      local_program().stage_axis = pipe.axis;
      local_program().stages = pipe.stages;
    }
    define_leaves();
    for (size_t i = 0; i < global_.program.instrs.size(); ++i) {
      const ir::Instr& ins = global_.program.instrs[i];
      if (pipe.on()) {
        lower_on_stage(ins, stage_of_[i]);
        continue;
      }
      lower(ins);
      for (int v : ins.out) constrain(v, ins.node);
    }
    if (pipe.on()) {
      out_.stage.resize(local_program().values.size(), kEveryStage);
      mark_parameter_homes();
      schedule_pipeline(local_program(), out_.schedule, global_.microbatches);
    }
    for (int v : inputs_of(global_)) out_.inputs.push_back(out_.local[size_t(v)]);
    for (int v : targets_of(global_)) out_.targets.push_back(out_.local[size_t(v)]);
    out_.input = out_.local[size_t(global_.input)];
    out_.target = out_.local[size_t(global_.target)];
    out_.loss = out_.local[size_t(global_.loss)];
    if (global_.accuracy >= 0) out_.accuracy = out_.local[size_t(global_.accuracy)];
    if (global_.nonfinite >= 0) out_.nonfinite = out_.local[size_t(global_.nonfinite)];
    std::vector<int> keep{out_.loss};
    if (out_.accuracy >= 0) keep.push_back(out_.accuracy);
    if (out_.nonfinite >= 0) keep.push_back(out_.nonfinite);
    out_.memory = plan::plan_memory(out_.program, keep);
    return std::move(out_);
  }

 private:
  const runtime::StepProgram& global_;
  const Mesh& mesh_;
  const LogicalRules& rules_;
  const Fallback fallback_;
  const WeightUpdate update_;
  PartitionedStep out_;

  // Pipeline state: each global instruction's stage, the stage (and unit) of each local value, the
  // stage the instruction being lowered runs on, and values already sent to a stage.
  std::vector<int64_t> stage_of_;
  struct Unit {
    int64_t microbatch = -1;
    bool backward = false;
  };
  std::vector<int64_t> vstage_;
  std::vector<Unit> vunit_;
  int64_t cur_stage_ = kEveryStage;
  int64_t next_tag_ = 0;
  std::map<std::pair<int, int64_t>, int> sent_;

  ir::Program& local_program() { return out_.program; }
  const Shape& gshape(int v) const { return global_.program.shape(v); }
  const Sharding& sharding_of(int v) const { return out_.sharding[size_t(v)]; }
  int local_of(int v) const { return out_.local[size_t(v)]; }

  int64_t group(const std::vector<std::string>& axes) const {
    int64_t n = 1;
    for (const std::string& a : axes) n *= mesh_.axis_size(a);
    return n;
  }

  Sharding replicated(size_t rank) const { return Sharding::replicated(rank); }

  // A sharding for `shape` from its logical names; an indivisible dimension is an error naming it.
  Sharding from_rules(const std::vector<std::string>& axes, const Shape& shape, const std::string& name) {
    std::vector<std::string> names = axes;
    names.resize(shape.size());
    Sharding s = replicated(shape.size());
    PartitionSpec spec = logical_to_mesh(names, rules_, name).spec;
    validate(spec, shape, mesh_, name);
    for (size_t i = 0; i < shape.size(); ++i) s.dims[i] = spec.axes_of(i);
    return s;
  }

  void define_leaves() {
    const ir::Program& gp = global_.program;
    const ir::Value& in = gp.values[size_t(global_.input)];
    const Sharding input_s = in.kind == ValueKind::Input ? from_rules(in.axes, in.shape, in.name) : Sharding{};
    const std::vector<std::string> batch_axes = input_s.dims.empty() ? std::vector<std::string>{} : input_s.dims[0];
    for (size_t v = 0; v < gp.values.size(); ++v) {
      const ir::Value& val = gp.values[v];
      if (val.kind == ValueKind::Temp || val.kind == ValueKind::Target) continue;
      Sharding s = from_rules(val.axes, val.shape, val.name);
      if (val.kind == ValueKind::OptState && update_ == WeightUpdate::Sharded)
        s.dims = optimizer_state_axes(s.dims, val.shape, mesh_, batch_axes);
      check_pipeline_axis(val, s);
      set(int(v), local_program().add_value(val.name, local_shape(val.shape, s), val.kind, val.axes, val.dtype), s);
    }
    // Targets (one per microbatch) follow the input's batch sharding.
    for (int target : targets_of(global_)) {
      const Shape& ts = gshape(target);
      Sharding t = replicated(ts.size());
      if (!ts.empty() && !batch_axes.empty()) t.dims[0] = batch_axes;
      set(target,
          local_program().add_value(gp.values[size_t(target)].name, local_shape(ts, t), ValueKind::Target, {}, gp.dtype(target)), t);
    }
  }

  // The pipeline's axis splits only the 'layer' dimension of stacked parameters (and their state).
  void check_pipeline_axis(const ir::Value& val, const Sharding& s) const {
    const Pipeline& pipe = out_.pipeline;
    if (!pipe.on()) return;
    for (size_t d = 0; d < s.dims.size(); ++d) {
      const bool stage_axis = std::find(s.dims[d].begin(), s.dims[d].end(), pipe.axis) != s.dims[d].end();
      const bool layer_dim = d == 0 && !val.axes.empty() && val.axes[0] == "layer";
      if (stage_axis && !layer_dim)
        throw Error(val.name + ": dimension " + std::to_string(d) + " (" + (d < val.axes.size() && !val.axes[d].empty() ? val.axes[d] : "unnamed") +
                    ") maps to mesh axis '" + pipe.axis + "', which carries the pipeline stages (layer=" + pipe.axis +
                    "); map it to another axis");
    }
  }

  // with_logical_constraint: a value whose layout the user pinned moves there after it is made.
  void constrain(int v, const std::string& node) {
    const ir::Value& val = global_.program.values[size_t(v)];
    if (!val.constrained || out_.local[size_t(v)] < 0) return;
    std::vector<std::string> names = val.axes;
    names.resize(val.shape.size());
    LogicalMapping m = logical_to_mesh(names, rules_, val.name, fallback_);
    validate(m.spec, val.shape, mesh_, val.name);
    Sharding to = replicated(val.shape.size());
    for (size_t d = 0; d < to.dims.size(); ++d) to.dims[d] = m.unconstrained[d] ? sharding_of(v).dims[d] : m.spec.axes_of(d);
    // Axes kept from propagation may clash with the constraint's; the constraint wins.
    std::set<std::string> used;
    for (size_t d = 0; d < to.dims.size(); ++d)
      if (!m.unconstrained[d]) used.insert(to.dims[d].begin(), to.dims[d].end());
    for (size_t d = 0; d < to.dims.size(); ++d)
      if (m.unconstrained[d] && std::any_of(to.dims[d].begin(), to.dims[d].end(), [&](const std::string& a) { return used.count(a); }))
        to.dims[d].clear();
    if (sharding_of(v) == to) return;
    const int moved = reshard(v, to, node);
    set(v, moved, to);
  }

  void set(int global, int local, Sharding s) {
    out_.local[size_t(global)] = local;
    out_.sharding[size_t(global)] = std::move(s);
  }

  int comm(Op op, int local, const std::vector<std::string>& axes, int64_t dim, const std::string& node, const std::string& what) {
    ir::Attrs a;
    a.mesh_axes = axes;
    a.group_size = group(axes);
    a.dim = dim;
    int out = local_program().apply1(op, {local}, a, node);
    if (op != Op::ShardSlice)
      out_.collectives.push_back({op, axes, double(local_program().bytes(op == Op::AllGather ? out : local)), what, node});
    return out;
  }

  int all_to_all(int local, const std::vector<std::string>& axes, int64_t from_dim, int64_t to_dim, const std::string& node,
                 const std::string& what) {
    ir::Attrs a;
    a.mesh_axes = axes;
    a.group_size = group(axes);
    a.dim = from_dim;  // gathered
    a.split_dim = to_dim;
    int out = local_program().apply1(Op::AllToAll, {local}, a, node);
    out_.collectives.push_back({Op::AllToAll, axes, double(local_program().bytes(local)), what, node});
    return out;
  }

  // Moves `v` to layout `to`, returning the local value that has it (the original if it already
  // does). A layout made once is reused by every later reader (a forward activation that the
  // backward pass reads again is not reduced twice).
  std::map<std::pair<int, std::string>, int> resharded_;
  int reshard(int v, const Sharding& to, const std::string& node) override {
    if (sharding_of(v) == to) return local_of(v);
    auto [it, fresh] = resharded_.try_emplace({v, to.str() + "@" + std::to_string(cur_stage_)}, -1);
    if (fresh) it->second = reshard_now(v, to, node);
    return it->second;
  }

  int reshard_now(int v, const Sharding& to, const std::string& node) {
    Sharding cur = sharding_of(v);
    int local = local_of(v);
    const std::string what = global_.program.values[size_t(v)].name;
    // Pending sums the target does not keep: scatter into a dimension the target splits over
    // exactly those axes, else reduce. Sums the target keeps stay pending (a rule may move a
    // partial value, e.g. gather its layer axis, and leave the reduction to a later reader).
    std::set<std::string> resolve;
    for (const std::string& a : cur.partial)
      if (!to.partial.count(a)) resolve.insert(a);
    for (size_t d = 0; d < to.dims.size() && !resolve.empty(); ++d) {
      const auto& want = to.dims[d];
      const bool fits = !want.empty() && cur.dims[d].empty() &&
                        std::all_of(want.begin(), want.end(), [&](const std::string& a) { return resolve.count(a); });
      if (!fits) continue;
      local = comm(Op::ReduceScatter, local, want, int64_t(d), node, what);
      cur.dims[d] = want;
      for (const std::string& a : want) cur.partial.erase(a), resolve.erase(a);
    }
    if (!resolve.empty()) {
      local = comm(Op::AllReduce, local, std::vector<std::string>(resolve.begin(), resolve.end()), 0, node, what);
      for (const std::string& a : resolve) cur.partial.erase(a);
    }
    // Axes that only move from one dimension to another: one all-to-all instead of gather + slice.
    for (size_t d = 0; d < cur.dims.size(); ++d) {
      if (cur.dims[d].empty() || cur.dims[d] == to.dims[d]) continue;
      for (size_t e = 0; e < cur.dims.size(); ++e)
        if (e != d && cur.dims[e].empty() && to.dims[e] == cur.dims[d]) {
          local = all_to_all(local, cur.dims[d], int64_t(d), int64_t(e), node, what);
          cur.dims[e] = cur.dims[d];
          cur.dims[d].clear();
          break;
        }
    }
    for (size_t d = 0; d < cur.dims.size(); ++d)
      if (!cur.dims[d].empty() && cur.dims[d] != to.dims[d]) {
        local = comm(Op::AllGather, local, cur.dims[d], int64_t(d), node, what);
        cur.dims[d].clear();
      }
    for (size_t d = 0; d < cur.dims.size(); ++d)
      if (cur.dims[d] != to.dims[d]) {
        local = comm(Op::ShardSlice, local, to.dims[d], int64_t(d), node, what);
        cur.dims[d] = to.dims[d];
      }
    return local;
  }

  // --- ir::PartitionContext: what the primitives' rules (engine/ir/primitives/) use.
  const Sharding& layout(int v) const override { return sharding_of(v); }
  const Shape& shape(int v) const override { return gshape(v); }
  const std::string& name(int v) const override { return global_.program.values[size_t(v)].name; }
  void produce(const ir::Instr& ins, std::vector<int> in, const std::vector<Sharding>& out_s, ir::Attrs attrs) override {
    std::vector<int> outs = local_program().apply(ins.op, std::move(in), std::move(attrs), ins.node);
    for (size_t k = 0; k < outs.size(); ++k) set(ins.out[k], outs[k], out_s[k]);
  }
  int apply(Op op, std::vector<int> in, ir::Attrs attrs, const std::string& node, const std::string& name) override {
    std::vector<int> outs = local_program().apply(op, std::move(in), std::move(attrs), node, name);
    return outs.empty() ? -1 : outs[0];
  }
  int all_reduce(int local, const std::vector<std::string>& axes, const std::string& node, const std::string& what) override {
    return comm(Op::AllReduce, local, axes, 0, node, what);
  }
  void gather_in_place(int local, const std::vector<std::string>& axes, int64_t dim, const std::string& node,
                       const std::string& what) override {
    ir::Attrs a;
    a.mesh_axes = axes;
    a.group_size = group(axes);
    a.dim = dim;
    local_program().apply(Op::AllGatherInPlace, {local}, a, node);
    out_.collectives.push_back({Op::AllGatherInPlace, axes, double(local_program().bytes(local)), what, node});
  }
  void define(int v, int local, Sharding s) override { set(v, local, std::move(s)); }
  int64_t group_size(const std::vector<std::string>& axes) const override { return group(axes); }
  Shape local_shape(const Shape& global, const Sharding& s) const override {
    Shape out = global;
    for (size_t i = 0; i < out.size() && i < s.dims.size(); ++i) out[i] /= group(s.dims[i]);
    return out;
  }

  void lower(const ir::Instr& ins) {
    const ir::PartitionRule& rule = ir::primitive(ins.op).partition;
    if (!rule) throw Error(std::string("the partitioner has no rule for ") + ir::op_name(ins.op));
    rule(*this, ins);
  }

  // --- Pipelines.
  int64_t local_stage(int local) const { return size_t(local) < vstage_.size() ? vstage_[size_t(local)] : kEveryStage; }

  // Gives every local instruction from `begin` on the stage and unit, and their results the stage.
  void place(size_t begin, int64_t stage, const ir::Instr& from) {
    for (size_t k = begin; k < local_program().instrs.size(); ++k) {
      ir::Instr& x = local_program().instrs[k];
      x.stage = stage;
      x.microbatch = from.microbatch;
      x.backward = from.backward;
      x.layer = from.layer;
      x.layers = from.layers;
      for (int v : x.out) note(v, stage, Unit{from.microbatch, from.backward});
    }
  }
  void note(int local, int64_t stage, Unit u) {
    if (vstage_.size() <= size_t(local)) vstage_.resize(size_t(local) + 1, kEveryStage), vunit_.resize(size_t(local) + 1);
    vstage_[size_t(local)] = stage;
    vunit_[size_t(local)] = u;
  }

  // The local value holding global `v` on `stage`: sent there from the stage that made it (once).
  int on_stage(int v, int64_t stage, const ir::Instr& reader) {
    const int here = local_of(v);
    const int64_t from = local_stage(here);
    if (stage < 0 || from < 0 || from == stage) return here;
    auto [it, fresh] = sent_.try_emplace({v, stage}, -1);
    if (!fresh) return it->second;
    const Unit made = size_t(here) < vunit_.size() ? vunit_[size_t(here)] : Unit{};
    ir::Attrs a;
    a.tag = next_tag_++;
    a.peer = stage;
    ir::Instr send{Op::Send, {here}, {}, a, reader.node};
    send.stage = from;
    send.microbatch = made.microbatch;
    send.backward = made.backward;
    local_program().instrs.push_back(send);
    a.peer = from;
    a.shape = local_program().shape(here);
    a.dtype = local_program().dtype(here);
    const ir::Value& was = local_program().values[size_t(here)];
    const int got = local_program().add_value(was.name, a.shape, ir::ValueKind::Temp, was.axes, a.dtype);
    ir::Instr recv{Op::Recv, {}, {got}, a, reader.node};
    recv.stage = stage;
    recv.microbatch = reader.microbatch;
    recv.backward = reader.backward;
    local_program().instrs.push_back(recv);
    note(got, stage, Unit{reader.microbatch, reader.backward});
    const double bytes = double(local_program().bytes(got));
    out_.collectives.push_back({Op::Send, {out_.pipeline.axis}, bytes, global_.program.values[size_t(v)].name, reader.node});
    return it->second = got;
  }

  void lower_on_stage(const ir::Instr& ins, int64_t stage) {
    if (stage == kSplit) return ins.op == Op::Unstack ? split_unstack(ins) : split_stack(ins);
    // Operands made on another stage are sent here first; the rule sees them as local.
    std::vector<std::pair<int, int>> swapped;
    for (int v : ins.in) {
      const int there = on_stage(v, stage, ins);
      if (there != local_of(v)) swapped.push_back({v, local_of(v)}), out_.local[size_t(v)] = there;
    }
    cur_stage_ = stage;
    const size_t begin = local_program().instrs.size();
    lower(ins);
    for (int v : ins.out) constrain(v, ins.node);
    for (auto it = swapped.rbegin(); it != swapped.rend(); ++it) out_.local[size_t(it->first)] = it->second;
    const size_t end = local_program().instrs.size();
    // Work every stage does for a microbatch (summing a stage's own gradient blocks) is one copy per
    // stage, so each stage's copy runs in that stage's order.
    if (stage == kEveryStage && ins.microbatch >= 0) {
      place(begin, 0, ins);
      for (int64_t s = 1; s < out_.pipeline.stages; ++s) {
        for (size_t k = begin; k < end; ++k) local_program().instrs.push_back(local_program().instrs[k]);
        place(end + size_t(s - 1) * (end - begin), s, ins);
      }
      for (size_t k = begin; k < local_program().instrs.size(); ++k)
        for (int o : local_program().instrs[k].out) note(o, kEveryStage, Unit{ins.microbatch, ins.backward});
    } else {
      place(begin, stage, ins);
    }
    cur_stage_ = kEveryStage;
  }

  // Each stage unstacks its own block of a stacked parameter: its L/S layers. Once per step: every
  // microbatch reads the same slices, which would otherwise be copied again per microbatch in flight.
  std::map<int, std::vector<int>> unstacked_;
  void split_unstack(const ir::Instr& ins) {
    const int x = ins.in[0];
    const Sharding s = sharding_of(x);
    const Sharding slice{std::vector<std::vector<std::string>>(s.dims.begin() + 1, s.dims.end()), s.partial};
    if (const auto it = unstacked_.find(x); it != unstacked_.end()) {
      for (size_t j = 0; j < ins.out.size(); ++j) set(ins.out[j], it->second[j], slice);
      return;
    }
    if (s.dims.at(0) != std::vector<std::string>{out_.pipeline.axis})
      throw Error("internal: '" + name(x) + "' is not split over the pipeline axis");
    const int64_t stages = out_.pipeline.stages, per = int64_t(ins.out.size()) / stages;
    std::vector<int>& slices = unstacked_[x];
    for (int64_t st = 0; st < stages; ++st) {
      const size_t begin = local_program().instrs.size();
      const std::vector<int> outs = local_program().apply(Op::Unstack, {local_of(x)}, ins.attrs, ins.node);
      for (int64_t j = 0; j < per; ++j) set(ins.out[size_t(st * per + j)], outs[size_t(j)], slice);
      slices.insert(slices.end(), outs.begin(), outs.end());
      place(begin, st, ins);
    }
  }

  // Each stage stacks its own layers' gradients into its block of the stacked gradient.
  void split_stack(const ir::Instr& ins) {
    const int64_t stages = out_.pipeline.stages, per = int64_t(ins.in.size()) / stages;
    // As the Stack rule: equal pending sums stay pending and are reduced once, stacked.
    const bool same = std::all_of(ins.in.begin(), ins.in.end(), [&](int v) { return sharding_of(v) == sharding_of(ins.in[0]); });
    const Sharding part = same ? sharding_of(ins.in[0]) : sharding_of(ins.in[0]).without_partial();
    Sharding whole = part;
    whole.dims.insert(whole.dims.begin(), std::vector<std::string>{out_.pipeline.axis});
    const Shape& gs = gshape(ins.out[0]);
    const int out = local_program().add_value(global_.program.values[size_t(ins.out[0])].name, local_shape(gs, whole), ir::ValueKind::Temp,
                                  global_.program.values[size_t(ins.out[0])].axes, global_.program.dtype(ins.out[0]));
    for (int64_t st = 0; st < stages; ++st) {
      cur_stage_ = st;
      const size_t begin = local_program().instrs.size();
      std::vector<int> ops;
      for (int64_t j = 0; j < per; ++j) {
        const int v = ins.in[size_t(st * per + j)];
        const int there = on_stage(v, st, ins), before = local_of(v);
        out_.local[size_t(v)] = there;
        ops.push_back(reshard(v, part, ins.node));
        out_.local[size_t(v)] = before;
      }
      ir::Instr stack{Op::Stack, ops, {out}, ins.attrs, ins.node};
      local_program().instrs.push_back(stack);
      place(begin, st, ins);
    }
    cur_stage_ = kEveryStage;
    set(ins.out[0], out, whole);
    note(out, kEveryStage, Unit{ins.microbatch, ins.backward});
  }

  // A parameter (and its state) kept whole on every stage is updated only where its gradient is:
  // that stage holds its current value.
  void mark_parameter_homes() {
    for (const ir::Instr& ins : local_program().instrs)
      if ((ins.op == Op::AdamUpdate || ins.op == Op::SgdUpdate) && ins.stage >= 0)
        for (size_t k = 0; k < ins.in.size(); ++k)
          if (k != 1) out_.stage[size_t(ins.in[k])] = ins.stage;
    for (size_t v = 0; v < vstage_.size() && v < out_.stage.size(); ++v)
      if (local_program().values[v].kind == ir::ValueKind::Temp) out_.stage[v] = vstage_[v];
  }
};

// Per dimension: block index of the device and the block's extent.
void block_of(const Shape& global, const Sharding& s, const Mesh& mesh, int64_t device, Shape& start, Shape& size) {
  const std::vector<int64_t> c = mesh.coords(device);
  start.assign(global.size(), 0);
  size = global;
  for (size_t d = 0; d < global.size() && d < s.dims.size(); ++d) {
    int64_t idx = 0, n = 1;
    for (const std::string& a : s.dims[d]) {
      const int k = mesh.axis_index(a);
      idx = idx * mesh.axes()[size_t(k)].size + c[size_t(k)];
      n *= mesh.axes()[size_t(k)].size;
    }
    size[d] = global[d] / n;
    start[d] = idx * size[d];
  }
}

template <class F>
void for_each_block_row(const Shape& global, const Shape& start, const Shape& size, F f) {
  // Copies contiguous runs of the last dimension: f(global offset, local offset, count).
  const size_t r = global.size();
  if (r == 0) return f(0, 0, 1);
  std::vector<int64_t> idx(r, 0);
  const int64_t rows = numel(size) / size[r - 1];
  for (int64_t row = 0; row < rows; ++row) {
    int64_t rem = row, goff = 0, loff = row * size[r - 1];
    for (size_t d = r - 1; d-- > 0;) {
      idx[d] = rem % size[d];
      rem /= size[d];
    }
    int64_t stride = 1;
    for (size_t d = r; d-- > 0;) {
      goff += (start[d] + (d == r - 1 ? 0 : idx[d])) * stride;
      stride *= global[d];
    }
    f(goff, loff, size[r - 1]);
  }
}

}  // namespace

namespace {
std::atomic<int64_t> g_partitions{0};
}  // namespace

int64_t partitions_built() { return g_partitions.load(); }

PartitionedStep partition(const runtime::StepProgram& step, const Mesh& mesh, const LogicalRules& rules,
                          Fallback constraint_fallback, WeightUpdate update, PipelineSchedule schedule) {
  g_partitions.fetch_add(1);
  return Partitioner(step, mesh, rules, constraint_fallback, update, schedule).run();
}

int PartitionedStep::device_holding(int local, const Mesh& mesh, const std::vector<int>& devices) const {
  const int64_t st = size_t(local) < stage.size() ? stage[size_t(local)] : kEveryStage;
  if (st < 0 || devices.empty()) return devices.empty() ? 0 : devices.front();
  const int k = mesh.axis_index(pipeline.axis);
  for (int d : devices)
    if (mesh.coords(d)[size_t(k)] == st) return d;
  throw Error("'" + program.values[size_t(local)].name + "' is held by pipeline stage " + std::to_string(st) +
              ", none of whose devices this process holds");
}

void block_bounds(const Shape& global, const Sharding& s, const Mesh& mesh, int64_t device, Shape& start, Shape& size) {
  block_of(global, s, mesh, device, start, size);
}

Tensor local_block(const Tensor& global, const Sharding& s, const Mesh& mesh, int64_t device) {
  Shape start, size;
  block_of(global.shape, s, mesh, device, start, size);
  Tensor out(size);
  for_each_block_row(global.shape, start, size, [&](int64_t g, int64_t l, int64_t n) {
    std::copy(global.data.begin() + g, global.data.begin() + g + n, out.data.begin() + l);
  });
  return out;
}

void place_block(Tensor& global, const Tensor& block, const Sharding& s, const Mesh& mesh, int64_t device) {
  Shape start, size;
  block_of(global.shape, s, mesh, device, start, size);
  for_each_block_row(global.shape, start, size, [&](int64_t g, int64_t l, int64_t n) {
    std::copy(block.data.begin() + l, block.data.begin() + l + n, global.data.begin() + g);
  });
}

}  // namespace shardlab::sharding
