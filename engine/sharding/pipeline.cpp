#include "engine/sharding/pipeline.h"

#include <algorithm>
#include <climits>
#include <map>
#include <queue>
#include <set>

#include "engine/util/error.h"

namespace shardlab::sharding {

using ir::Op;

PipelineSchedule parse_pipeline_schedule(const std::string& text, const std::string& where) {
  if (text == "1f1b" || text.empty()) return PipelineSchedule::OneFOneB;
  if (text == "gpipe") return PipelineSchedule::GPipe;
  throw Error(where + ": '" + text + "' is not a pipeline schedule (gpipe or 1f1b)");
}

const char* pipeline_schedule_name(PipelineSchedule s) { return s == PipelineSchedule::GPipe ? "gpipe" : "1f1b"; }

Pipeline pipeline_of(const LogicalRules& rules, const Mesh& mesh) {
  for (const LogicalRule& r : rules) {
    if (r.logical != "layer") continue;
    if (r.mesh.empty()) return {};
    if (r.mesh.size() > 1)
      throw Error("logical_axis_rules: layer=" + r.mesh[0] + "+" + r.mesh[1] +
                  ": the 'layer' axis splits into pipeline stages along one mesh axis");
    if (mesh.axis_index(r.mesh[0]) < 0) return {};  // reported as an unknown axis elsewhere
    return Pipeline{r.mesh[0], mesh.axis_size(r.mesh[0])};
  }
  return {};
}

double bubble_fraction(int64_t stages, int64_t microbatches) {
  if (stages <= 1) return 0.0;
  return double(stages - 1) / double(std::max<int64_t>(microbatches, 1) + stages - 1);
}

namespace {

constexpr int64_t kFree = -3;  // not yet placed: every operand is everywhere

bool stacked_param(const ir::Value& v) { return v.kind == ir::ValueKind::Param && !v.axes.empty() && v.axes[0] == "layer"; }

}  // namespace

std::vector<int64_t> assign_stages(const ir::Program& g, int64_t stages, const std::string& axis) {
  const int64_t S = stages;
  std::vector<int64_t> vstage(g.values.size(), kEveryStage);
  std::vector<int64_t> st(g.instrs.size(), kFree);
  std::set<Shape> stacked_shapes;
  for (const ir::Value& v : g.values)
    if (stacked_param(v)) {
      if (v.shape.at(0) % S != 0)
        throw Error(v.name + ": its " + std::to_string(v.shape[0]) + " layers do not divide among the " + std::to_string(S) +
                    " pipeline stages of mesh axis '" + axis + "' (layer=" + axis + ")");
      stacked_shapes.insert(v.shape);
    }
  auto layer_stage = [&](int64_t layer, int64_t layers) { return layer * S / layers; };
  for (size_t i = 0; i < g.instrs.size(); ++i) {
    const ir::Instr& ins = g.instrs[i];
    if (ins.op == Op::Unstack && stacked_param(g.values[size_t(ins.in[0])])) {
      st[i] = kSplit;
      const int64_t L = int64_t(ins.out.size());
      for (size_t j = 0; j < ins.out.size(); ++j) vstage[size_t(ins.out[j])] = layer_stage(int64_t(j), L);
      continue;
    }
    if (ins.op == Op::Stack && stacked_shapes.count(g.shape(ins.out[0])) && int64_t(ins.in.size()) == g.shape(ins.out[0])[0]) {
      st[i] = kSplit;  // each stage stacks its own layers' gradients into its block
      vstage[size_t(ins.out[0])] = kEveryStage;
      continue;
    }
    if (ins.layer >= 0 && ins.layers > 0) {
      if (ins.layers % S != 0)
        throw Error(ins.node + ": its Repeat's " + std::to_string(ins.layers) + " layers do not divide among the " +
                    std::to_string(S) + " pipeline stages of mesh axis '" + axis + "'");
      st[i] = layer_stage(ins.layer, ins.layers);
    } else {
      for (int v : ins.in) st[i] = std::max(st[i], vstage[size_t(v)]);
      if (st[i] < 0) st[i] = kFree;
    }
    for (int v : ins.out) vstage[size_t(v)] = st[i];
  }
  // What reads only values every device holds runs on the earliest stage that needs it (an
  // embedding before the first Repeat, a constant), or everywhere when every device does.
  constexpr int64_t kUnread = INT64_MAX;
  std::vector<int64_t> want(g.values.size(), kUnread);
  for (size_t i = g.instrs.size(); i-- > 0;) {
    const ir::Instr& ins = g.instrs[i];
    if (st[i] == kFree) {
      int64_t s = kUnread;
      for (int v : ins.out) s = std::min(s, want[size_t(v)]);
      st[i] = s == kUnread ? kEveryStage : s;
    }
    for (size_t k = 0; k < ins.in.size(); ++k) {
      int64_t reader = st[i];
      if (st[i] == kSplit)
        reader = ins.op == Op::Stack ? layer_stage(int64_t(k), int64_t(ins.in.size())) : kEveryStage;
      int64_t& w = want[size_t(ins.in[k])];
      w = std::min(w, reader);
    }
  }
  // A parameter outside the Repeats is held, and updated, on the stage that reads it. One read on
  // two stages (a weight tied across the pipeline: Attend on the last stage sharing the first
  // stage's Embed table) would leave one stage's copy stale: refused rather than trained wrong.
  std::map<int, std::set<int64_t>> readers;
  for (size_t i = 0; i < g.instrs.size(); ++i) {
    const ir::Instr& ins = g.instrs[i];
    if (st[i] < 0 || ins.op == Op::AdamUpdate || ins.op == Op::SgdUpdate) continue;
    for (int v : ins.in)
      if (g.values[size_t(v)].kind == ir::ValueKind::Param && !stacked_param(g.values[size_t(v)])) readers[v].insert(st[i]);
  }
  for (const auto& [v, where] : readers)
    if (where.size() > 1)
      throw Error("parameter '" + g.values[size_t(v)].name + "' is read on pipeline stages " + std::to_string(*where.begin()) +
                  " and " + std::to_string(*where.rbegin()) + " of mesh axis '" + axis +
                  "' (a weight tied across the pipeline?): a pipeline keeps each parameter on one stage; untie it, or drop "
                  "the rule layer=" + axis);
  return st;
}

namespace {

// Values an instruction writes: its results, and the operands it updates in place.
std::vector<int> writes(const ir::Instr& ins) {
  std::vector<int> w = ins.out;
  if (ins.op == Op::AdamUpdate || ins.op == Op::SgdUpdate) {
    for (size_t k = 0; k < ins.in.size(); ++k)
      if (k != 1) w.push_back(ins.in[k]);  // the parameter and its state; operand 1 is the gradient
  } else if (ins.op == Op::AllGatherInPlace) {
    w.push_back(ins.in[0]);
  }
  return w;
}

// Each stage's units of work, (microbatch, backward), in the schedule's order.
std::vector<std::vector<std::pair<int64_t, bool>>> stage_orders(PipelineSchedule schedule, int64_t S, int64_t M) {
  std::vector<std::vector<std::pair<int64_t, bool>>> out(static_cast<size_t>(S));
  for (int64_t s = 0; s < S; ++s) {
    auto& o = out[size_t(s)];
    if (schedule == PipelineSchedule::GPipe) {
      for (int64_t m = 0; m < M; ++m) o.push_back({m, false});
      for (int64_t m = 0; m < M; ++m) o.push_back({m, true});
      continue;
    }
    const int64_t warmup = std::min(S - s - 1, M);
    for (int64_t m = 0; m < warmup; ++m) o.push_back({m, false});
    for (int64_t m = 0; m < M; ++m) {
      if (warmup + m < M) o.push_back({warmup + m, false});
      o.push_back({m, true});
    }
  }
  return out;
}

}  // namespace

void schedule_pipeline(ir::Program& p, PipelineSchedule schedule, int64_t microbatches) {
  const int64_t S = p.stages, M = std::max<int64_t>(microbatches, 1);
  if (S <= 1) return;
  // A rank for every (stage, microbatch, pass): the order in which a step-by-step simulation of the
  // stages, each starting its next unit once that unit's inputs are done, starts them.
  const auto orders = stage_orders(schedule, S, M);
  std::map<std::tuple<int64_t, int64_t, bool>, int64_t> rank;
  {
    std::vector<size_t> next(size_t(S), 0);
    std::set<std::tuple<int64_t, int64_t, bool>> done;
    int64_t r = 0;
    for (bool progress = true; progress;) {
      progress = false;
      std::vector<std::tuple<int64_t, int64_t, bool>> started;
      for (int64_t s = 0; s < S; ++s) {
        if (next[size_t(s)] >= orders[size_t(s)].size()) continue;
        const auto [m, back] = orders[size_t(s)][next[size_t(s)]];
        const bool ready = back ? done.count({s, m, false}) && (s == S - 1 || done.count({s + 1, m, true}))
                                : s == 0 || done.count({s - 1, m, false});
        if (!ready) continue;
        rank[{s, m, back}] = r++;
        started.push_back({s, m, back});
        ++next[size_t(s)];
        progress = true;
      }
      done.insert(started.begin(), started.end());
    }
    for (int64_t s = 0; s < S; ++s)
      if (next[size_t(s)] < orders[size_t(s)].size()) throw Error("internal: the pipeline schedule does not complete");
  }

  const size_t n = p.instrs.size();
  std::vector<int64_t> key(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const ir::Instr& ins = p.instrs[i];
    if (ins.microbatch < 0) key[i] = INT64_MAX;  // the updates, once every microbatch is done
    else if (ins.stage >= 0) key[i] = rank.at({ins.stage, std::min(ins.microbatch, M - 1), ins.backward});
    else key[i] = -1;  // on every stage: as soon as its operands are ready
  }

  // Dependences per stage: read after write, and write after read or write (updates in place).
  const size_t nv = p.values.size();
  std::vector<std::vector<int>> succ(n);
  std::vector<int> indegree(n, 0);
  auto edge = [&](int from, int to) {
    if (from < 0 || from == to) return;
    succ[size_t(from)].push_back(to);
    ++indegree[size_t(to)];
  };
  std::vector<int> last_writer(size_t(S) * nv, -1);
  std::vector<std::vector<int>> readers(size_t(S) * nv);
  std::map<int64_t, int> send_of;
  for (size_t i = 0; i < n; ++i) {
    const ir::Instr& ins = p.instrs[i];
    const int64_t lo = ins.stage >= 0 ? ins.stage : 0, hi = ins.stage >= 0 ? ins.stage : S - 1;
    const std::vector<int> w = writes(ins);
    for (int64_t s = lo; s <= hi; ++s) {
      for (int v : ins.in) {
        const size_t k = size_t(s) * nv + size_t(v);
        edge(last_writer[k], int(i));
        readers[k].push_back(int(i));
      }
      for (int v : w) {
        const size_t k = size_t(s) * nv + size_t(v);
        edge(last_writer[k], int(i));
        for (int r : readers[k]) edge(r, int(i));
        readers[k].clear();
        last_writer[k] = int(i);
      }
    }
    if (ins.op == Op::Send) send_of[ins.attrs.tag] = int(i);
    if (ins.op == Op::Recv) edge(send_of.at(ins.attrs.tag), int(i));
  }
  // Kahn's order, taking the ready instruction of the earliest unit (then the earliest position).
  using Item = std::pair<int64_t, size_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push({key[i], i});
  std::vector<ir::Instr> out;
  out.reserve(n);
  while (!ready.empty()) {
    const size_t i = ready.top().second;
    ready.pop();
    out.push_back(p.instrs[i]);
    for (int j : succ[i])
      if (--indegree[size_t(j)] == 0) ready.push({key[size_t(j)], size_t(j)});
  }
  if (out.size() != n) throw Error("internal: the pipeline program has a dependence cycle");
  p.instrs = std::move(out);
}

}  // namespace shardlab::sharding
