#include "engine/sharding/layout.h"

#include <map>
#include <set>

#include "engine/runtime/train_step.h"
#include "engine/sharding/layout_problems.h"
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

// Activations with how many copies a step keeps: a Repeat block's run once per layer.
void collect_activations(const std::vector<graph::NodeReport>& nodes, int64_t copies,
                         std::vector<std::pair<const graph::NodeReport*, int64_t>>& out) {
  for (const graph::NodeReport& n : nodes) {
    if (n.type != "Input") out.push_back({&n, copies});
    const int64_t layers = n.params.empty() ? 1 : std::max<int64_t>(n.params.front().layers, 1);
    collect_activations(n.body, copies * layers, out);
  }
}

// Whether any optimizer state of parameter `name` is split where the parameter is not.
bool sharded_state(const ShardingReport& r, const std::string& name) {
  const ArraySharding* param = r.find(name);
  for (const ArraySharding& a : r.arrays)
    if (a.kind == ArrayKind::OptimizerState && a.name.rfind(name + "/", 0) == 0 && !(a.spec == param->spec)) return true;
  return false;
}

}  // namespace

ShardingReport analyze_sharding(const project::Project& p, const graph::GraphReport& report, const Mesh& mesh,
                                const LogicalRules& rules) {
  ShardingReport r;
  r.mesh = mesh;
  r.rules = rules;
  std::map<std::string, std::set<std::string>> unmatched;  // logical name -> arrays
  std::set<std::string> axes_used;
  LayoutProblems problems(mesh);  // every array's error, reported once per cause

  auto add = [&](std::string name, ArrayKind kind, std::vector<std::string> logical, Shape shape) {
    ArraySharding a;
    a.name = std::move(name);
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
      params.push_back(r.arrays.size());
      add(n.name + "/" + info.name, ArrayKind::Parameter, info.axes, info.shape);
    }
  for (size_t i : std::vector<size_t>(params)) {
    const ArraySharding a = r.arrays[i];
    add("d_" + a.name, ArrayKind::Gradient, a.logical, a.shape);
    for (const std::string& st : optimizer_states(p.optimizer)) {
      add(a.name + "/" + st, ArrayKind::OptimizerState, a.logical, a.shape);
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
  std::vector<std::pair<const graph::NodeReport*, int64_t>> acts;
  for (const graph::NodeReport& n : report.nodes)
    if (n.type == "Input") add(n.name, ArrayKind::Input, n.output.axes, n.output.shape);
  collect_activations(report.nodes, 1, acts);
  std::map<std::string, int64_t> copies;
  for (const auto& [n, c] : acts) {
    add(n->name, ArrayKind::Activation, n->output.axes, n->output.shape);
    copies[n->name] = c;
  }

  r.errors = problems.messages();
  r.devices.assign(size_t(mesh.device_count()), DeviceMemory{});
  for (const ArraySharding& a : r.arrays)
    for (DeviceMemory& d : r.devices) {
      const double n = a.kind == ArrayKind::Activation ? double(copies[a.name]) : 1.0;
      // Every device holds one block of every array; blocks are equal in size.
      double& slot = a.kind == ArrayKind::Parameter        ? d.params
                     : a.kind == ArrayKind::OptimizerState ? d.opt_state
                     : a.kind == ArrayKind::Gradient       ? d.grads
                                                           : d.activations;
      slot += n * a.bytes_per_device;
    }

  for (const auto& [name, arrays] : unmatched) {
    std::string list;
    size_t shown = 0;
    for (const std::string& a : arrays)
      if (shown++ < 3) list += (list.empty() ? "" : ", ") + a;
    if (arrays.size() > 3) list += ", ...";
    r.warnings.push_back("logical axis '" + name + "' has no rule: it stays replicated in " + std::to_string(arrays.size()) +
                         " array(s) (" + list + ")");
  }
  for (const MeshAxis& ax : mesh.axes())
    if (ax.size > 1 && !axes_used.count(ax.name))
      r.warnings.push_back("mesh axis '" + ax.name + "' (size " + std::to_string(ax.size) + ") shards no array: its devices all hold the same data");
  if (mesh.device_count() > 1)
    for (const ArraySharding& a : r.arrays)
      if (a.kind == ArrayKind::Parameter && a.error.empty() && a.spec.replicated() && a.bytes_per_device >= kReplicatedGiantBytes)
        r.warnings.push_back(a.name + " (" + runtime::format_bytes(a.bytes_per_device) + ") is replicated on all " +
                             std::to_string(mesh.device_count()) + " devices, with its gradient" +
                             (sharded_state(r, a.name) ? "" : " and optimizer state"));
  return r;
}

}  // namespace shardlab::sharding
