#include "engine/sharding/layout.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/runtime/train_step.h"
#include "engine/sharding/layout_problems.h"
#include "engine/sharding/pipeline.h"
#include "engine/sharding/weight_update.h"
#include "engine/util/error.h"

namespace shardlab::sharding {

const char* kind_name(ArrayKind k) {
  switch (k) {
    case ArrayKind::Parameter: return "parameter";
    case ArrayKind::OptimizerState: return "optimizer state";
    case ArrayKind::Gradient: return "gradient";
    case ArrayKind::Activation: return "activation";
    case ArrayKind::Input: return "input";
  }
  return "?";
}

const ArraySharding* ShardingReport::find(const std::string& name) const {
  for (const ArraySharding& a : arrays)
    if (a.name == name) return &a;
  return nullptr;
}

Mesh project_mesh(const project::Project& p) { return mesh_from_json(p.mesh, p.display_name() + ": mesh"); }

LogicalRules project_rules(const project::Project& p) {
  return rules_from_json(p.logical_axis_rules, p.display_name() + ": logical_axis_rules");
}

namespace {

std::vector<std::string> optimizer_states(const project::OptimizerSpec& o) {
  if (o.type == "adam" || o.type == "adamw") return {"mu", "nu"};
  if (o.momentum != 0.0) return {"trace"};
  return {};
}

// Every node's activation, Repeat blocks' nodes included, in graph order.
void collect_activations(const std::vector<graph::NodeReport>& nodes, std::vector<const graph::NodeReport*>& out) {
  for (const graph::NodeReport& n : nodes) {
    if (n.type != "Input") out.push_back(&n);
    collect_activations(n.body, out);
  }
}

// Whether any optimizer state of parameter `name` is split where the parameter is not.
bool sharded_state(const ShardingReport& r, const std::string& name) {
  const ArraySharding* param = r.find(name);
  for (const ArraySharding& a : r.arrays)
    if (a.kind == ArrayKind::OptimizerState && a.name.rfind(name + "/", 0) == 0 && !(a.spec == param->spec)) return true;
  return false;
}

// The value of the global step each array of the report is.
std::map<std::string, int> step_values(const runtime::StepProgram& step, const graph::GraphReport& report) {
  std::map<std::string, int> v;
  for (const runtime::ModelParam& mp : step.params) {
    v[mp.path] = mp.value;
    v["d_" + mp.path] = mp.grad;
    for (int st : mp.state) v[step.program.values[size_t(st)].name] = st;
  }
  for (const graph::NodeReport& n : report.nodes)
    if (n.type == "Input") v[n.name] = step.input;
  for (const auto& [node, value] : step.activations)
    if (!v.count(node)) v[node] = value;
  return v;
}

// What each pipeline stage holds and runs: its devices' arena, its layers, the bubble.
void read_pipeline(ShardingReport& r, const runtime::StepProgram& step, const graph::GraphReport& report,
                   const PartitionedStep& plan, const Mesh& mesh) {
  const Pipeline& pipe = plan.pipeline;
  const int axis = mesh.axis_index(pipe.axis);
  r.pipeline_axis = pipe.axis;
  r.pipeline_schedule = pipeline_schedule_name(plan.schedule);
  r.bubble = bubble_fraction(pipe.stages, step.microbatches);
  r.stages.assign(size_t(pipe.stages), {});
  for (int64_t d = 0; d < mesh.device_count(); ++d)
    r.devices[size_t(d)].arena = double(plan.memory.stage_arena_bytes.at(size_t(mesh.coords(d)[size_t(axis)])) + plan.memory.staging_bytes);
  for (int64_t s = 0; s < pipe.stages; ++s)
    r.stages[size_t(s)].arena = double(plan.memory.stage_arena_bytes[size_t(s)] + plan.memory.staging_bytes);
  // A Repeat's layers split evenly; a layer outside the Repeats lives where its parameters are updated.
  for (const graph::NodeReport& n : report.nodes) {
    if (n.type == "Repeat") {
      const int64_t layers = n.params.empty() ? 0 : n.params.front().layers, per = layers / pipe.stages;
      for (int64_t s = 0; s < pipe.stages && per > 0; ++s)
        r.stages[size_t(s)].layers.push_back(n.name + "[" + std::to_string(s * per) + ":" + std::to_string((s + 1) * per) + "]");
      continue;
    }
    for (const runtime::ModelParam& mp : step.params) {
      if (mp.path.rfind(n.name + "/", 0) != 0) continue;
      const int local = plan.local[size_t(mp.value)];
      const int64_t home = local >= 0 && size_t(local) < plan.stage.size() ? plan.stage[size_t(local)] : -1;
      if (home >= 0) r.stages[size_t(home)].layers.push_back(n.name);
      break;
    }
  }
}

// Reads every array's layout, shard and bytes, and each device's memory, from the partitioned step.
void read_plan(ShardingReport& r, const runtime::StepProgram& step, const graph::GraphReport& report,
               std::shared_ptr<const PartitionedStep> plan, const Mesh& mesh) {
  const std::map<std::string, int> values = step_values(step, report);
  for (ArraySharding& a : r.arrays) {
    const auto it = values.find(a.name);
    if (it == values.end() || it->second < 0) continue;  // not in the step (nothing reads it): as the rules say
    const ir::Layout& l = plan->sharding[size_t(it->second)];
    // Spelled as the rules spell it: no trailing None beyond the dimensions they name.
    const size_t named = a.spec.dims.size();
    a.spec = PartitionSpec(l.dims);
    while (a.spec.dims.size() > named && a.spec.dims.back().empty()) a.spec.dims.pop_back();
    a.pending_sum.assign(l.partial.begin(), l.partial.end());
    // Under gradient accumulation an input or activation is one microbatch's.
    if (a.kind == ArrayKind::Input || a.kind == ArrayKind::Activation) a.shape = step.program.shape(it->second);
    const int local = plan->local[size_t(it->second)];
    a.shard = local >= 0 ? plan->program.shape(local) : shard_shape(a.spec, a.shape, mesh);
    a.dtype = step.program.dtype(it->second);
    a.bytes_per_device = double(numel(a.shard)) * double(dtype_size(a.dtype));
  }
  DeviceMemory d;
  d.params = double(plan->memory.param_bytes);
  d.opt_state = double(plan->memory.opt_state_bytes);
  d.arena = double(plan->memory.arena_bytes + plan->memory.staging_bytes);
  r.devices.assign(size_t(mesh.device_count()), d);  // every device runs the same local program
  r.microbatches = step.microbatches;
  if (plan->pipeline.on()) read_pipeline(r, step, report, *plan, mesh);
  r.plan = std::move(plan);
}

// Accumulation saves activation memory but holds the summed gradients, as large as the parameters
// they belong to: where that costs more than it saves, say so before anything runs.
void warn_if_accumulation_costs_memory(ShardingReport& r, const project::Project& p, const graph::GraphReport& report,
                                       const Mesh& mesh, const LogicalRules& rules) {
  project::Project whole = p;
  whole.training.accumulate = 1;
  const runtime::StepProgram step = runtime::build_step(whole, report, whole.training.batch_size, true);
  const PartitionedStep plan = partition(step, mesh, rules, parse_fallback(p.constraint_fallback, p.display_name() + ": constraint_fallback"), WeightUpdate::Sharded,
                                      parse_pipeline_schedule(p.training.pipeline_schedule, p.display_name() + ": training.pipeline_schedule"));
  const double one = double(plan.memory.arena_bytes + plan.memory.staging_bytes), many = r.devices.front().arena;
  if (many <= one) return;
  r.diagnostics.push_back(make_diagnostic(
      Severity::Warning, "memory.accumulate", "training.accumulate",
      "training.accumulate: " + std::to_string(r.microbatches) + " microbatches need a step arena of " + runtime::format_bytes(many) +
          " per device, one batch " + runtime::format_bytes(one) +
          ": the summed gradients outweigh the activations the microbatches save",
      "set training.accumulate to 1, or accumulate where activations dominate (a larger batch, narrower layers)"));
}

}  // namespace

std::string ArraySharding::spec_text() const {
  std::string s = spec.str();
  if (!pending_sum.empty()) {
    s += " +sum(";
    for (size_t i = 0; i < pending_sum.size(); ++i) s += (i ? "," : "") + pending_sum[i];
    s += ")";
  }
  return s;
}

ShardingReport analyze_sharding(const project::Project& p, const graph::GraphReport& report, const Mesh& mesh,
                                const LogicalRules& rules) {
  ShardingReport r;
  r.mesh = mesh;
  r.rules = rules;
  std::map<std::string, std::set<std::string>> unmatched;  // logical name -> arrays
  std::set<std::string> axes_used;
  LayoutProblems problems(mesh);  // every array's error, reported once per cause

  auto add = [&](std::string name, std::string node, ArrayKind kind, std::vector<std::string> logical, Shape shape) {
    ArraySharding a;
    a.name = std::move(name);
    a.node = std::move(node);
    a.kind = kind;
    a.logical = std::move(logical);
    a.logical.resize(shape.size());
    a.shape = std::move(shape);
    try {
      LogicalMapping m = logical_to_mesh(a.logical, rules, a.name);
      a.spec = m.spec;
      for (const auto& d : a.spec.dims) axes_used.insert(d.begin(), d.end());
      for (const std::string& u : m.unmatched) unmatched[u].insert(a.name);
      a.error = validation_error(a.spec, a.shape, mesh, a.name);
    } catch (const Error& e) {
      a.error = e.what();
    }
    if (!a.error.empty()) {
      problems.add(a.name, a.spec, a.shape, a.error);
      a.spec = PartitionSpec();
    }
    a.shard = shard_shape(a.spec, a.shape, mesh);
    a.bytes_per_device = double(numel(a.shard)) * sizeof(float);
    r.arrays.push_back(std::move(a));
  };

  // The batch's mesh axes (the input's first dimension): the optimizer state is further split over
  // those its parameter does not use, as the partitioner does (a sharded weight update).
  std::vector<std::string> batch_axes;
  for (const graph::NodeReport& n : report.nodes)
    if (n.type == "Input" && !n.output.shape.empty()) try {
        std::vector<std::string> names = n.output.axes;
        names.resize(n.output.shape.size());
        batch_axes = logical_to_mesh(names, rules, n.name).spec.axes_of(0);
      } catch (const Error&) {
        // The input's own entry reports the error.
      }

  // Parameters, and the gradient that shares their sharding, and the optimizer state.
  std::vector<size_t> params;
  for (const graph::NodeReport& n : report.nodes)
    for (const graph::ParamInfo& info : n.params) {
      if (!info.tied.empty()) continue;  // listed once, as its own node's
      params.push_back(r.arrays.size());
      add(n.name + "/" + info.name, n.name, ArrayKind::Parameter, info.axes, info.shape);
    }
  for (size_t i : std::vector<size_t>(params)) {
    const ArraySharding a = r.arrays[i];
    add("d_" + a.name, a.node, ArrayKind::Gradient, a.logical, a.shape);
    for (const std::string& st : optimizer_states(p.optimizer)) {
      add(a.name + "/" + st, a.node, ArrayKind::OptimizerState, a.logical, a.shape);
      ArraySharding& s = r.arrays.back();
      if (!s.error.empty()) continue;
      const size_t named = s.spec.dims.size();
      s.spec = PartitionSpec(optimizer_state_axes(s.spec.dims, s.shape, mesh, batch_axes));
      // Spelled as the parameter is: no trailing None beyond what its own spec names.
      while (s.spec.dims.size() > named && s.spec.dims.back().empty()) s.spec.dims.pop_back();
      s.shard = shard_shape(s.spec, s.shape, mesh);
      s.bytes_per_device = double(numel(s.shard)) * sizeof(float);
    }
  }
  // Inputs and activations: their logical names act as with_logical_constraint.
  for (const graph::NodeReport& n : report.nodes)
    if (n.type == "Input") add(n.name, n.name, ArrayKind::Input, n.output.axes, n.output.shape);
  std::vector<const graph::NodeReport*> acts;
  collect_activations(report.nodes, acts);
  for (const graph::NodeReport* n : acts) {
    add(n->name, n->name, ArrayKind::Activation, n->output.axes, n->output.shape);
    for (const graph::InnerArray& a : n->inner) add(n->name + "/" + a.name, n->name, ArrayKind::Activation, a.array.axes, a.array.shape);
  }

  r.diagnostics = problems.diagnostics();
  // Every layout divides: partition the step for real and read what it runs with.
  if (r.diagnostics.empty() && report.ok()) try {
      auto built = std::make_shared<const runtime::StepProgram>(runtime::build_step(p, report, p.training.batch_size, true));
      const runtime::StepProgram& step = *built;
      r.step = built;
      auto plan = std::make_shared<const PartitionedStep>(
          partition(step, mesh, rules, parse_fallback(p.constraint_fallback, p.display_name() + ": constraint_fallback"), WeightUpdate::Sharded,
                                      parse_pipeline_schedule(p.training.pipeline_schedule, p.display_name() + ": training.pipeline_schedule")));
      read_plan(r, step, report, std::move(plan), mesh);
      if (!r.stages.empty() && r.bubble >= 0.5) {
        const int64_t stages = int64_t(r.stages.size()), want = 4 * stages;
        r.diagnostics.push_back(make_diagnostic(
            Severity::Warning, "pipeline.bubble", "training.accumulate",
            "training.accumulate: " + std::to_string(step.microbatches) + " microbatches through " + std::to_string(stages) +
                " pipeline stages leave each stage idle " + std::to_string(int(r.bubble * 100 + 0.5)) +
                "% of the step while the pipeline fills and drains ((S-1)/(M+S-1))",
            "raise training.accumulate to " + std::to_string(want) + " or more (" +
                std::to_string(int(bubble_fraction(stages, want) * 100 + 0.5)) + "% idle), or use fewer stages"));
      } else if (step.microbatches > 1 && r.stages.empty()) {
        // (A pipeline needs its microbatches, whatever they cost.)
        warn_if_accumulation_costs_memory(r, p, report, mesh, rules);
      }
    } catch (const std::exception& e) {
      // The partitioner's refusal (the constraint fallback, a rule it cannot apply).
      r.diagnostics.push_back(make_diagnostic(Severity::Error, "layout.plan", "logical_axis_rules", e.what()));
    }
  if (r.devices.empty()) {
    // No plan: the blocks the rules give, each array once, so the view still says something.
    DeviceMemory d;
    for (const ArraySharding& a : r.arrays)
      (a.kind == ArrayKind::Parameter ? d.params : a.kind == ArrayKind::OptimizerState ? d.opt_state : d.arena) +=
          a.bytes_per_device;
    r.devices.assign(size_t(mesh.device_count()), d);
  }

  auto warn = [&](std::string code, std::vector<std::string> arrays, std::string field, std::string message, std::string fix) {
    Diagnostic d = make_diagnostic(Severity::Warning, std::move(code), std::move(field), std::move(message), std::move(fix));
    d.arrays = std::move(arrays);
    r.diagnostics.push_back(std::move(d));
  };
  for (const auto& [name, arrays] : unmatched) {
    std::string list;
    size_t shown = 0;
    for (const std::string& a : arrays)
      if (shown++ < 3) list += (list.empty() ? "" : ", ") + a;
    if (arrays.size() > 3) list += ", ...";
    warn("layout.no_rule", {arrays.begin(), arrays.end()}, "logical_axis_rules",
         "logical axis '" + name + "' has no rule: it stays replicated in " + std::to_string(arrays.size()) + " array(s) (" + list + ")",
         "add a rule for '" + name + "' (to a mesh axis, or to None to keep it replicated)");
  }
  for (const MeshAxis& ax : mesh.axes())
    if (ax.size > 1 && !axes_used.count(ax.name))
      warn("layout.unused_axis", {}, "mesh",
           "mesh axis '" + ax.name + "' (size " + std::to_string(ax.size) + ") shards no array: its devices all hold the same data",
           "map a logical axis onto '" + ax.name + "' in the rules, or remove it from the mesh");
  if (mesh.device_count() > 1)
    for (const ArraySharding& a : r.arrays)
      if (a.kind == ArrayKind::Parameter && a.error.empty() && a.spec.replicated() && a.bytes_per_device >= kReplicatedGiantBytes)
        warn("layout.replicated", {a.name}, "logical_axis_rules",
             a.name + " (" + runtime::format_bytes(a.bytes_per_device) + ") is replicated on all " +
                 std::to_string(mesh.device_count()) + " devices, with its gradient" +
                 (sharded_state(r, a.name) ? "" : " and optimizer state"),
             "map one of its logical axes (" + [&] {
               std::string l;
               for (const std::string& n : a.logical)
                 if (!n.empty()) l += (l.empty() ? "" : ", ") + n;
               return l.empty() ? std::string("none named") : l;
             }() + ") onto a mesh axis");

  // The nodes each problem concerns, from its arrays; and the plain lists of messages.
  std::map<std::string, std::string> node_of;
  for (const ArraySharding& a : r.arrays) node_of[a.name] = a.node;
  for (Diagnostic& d : r.diagnostics) {
    for (const std::string& a : d.arrays)
      if (const auto it = node_of.find(a); it != node_of.end() && !it->second.empty() &&
                                           std::find(d.nodes.begin(), d.nodes.end(), it->second) == d.nodes.end())
        d.nodes.push_back(it->second);
    (d.severity == Severity::Error ? r.errors : r.warnings).push_back(d.message);
  }
  return r;
}

}  // namespace shardlab::sharding
