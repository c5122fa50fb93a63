#include "engine/runtime/preflight.h"

#include <algorithm>
#include <optional>

#include "engine/data/data_probe.h"
#include "engine/runtime/data_fit.h"
#include "engine/runtime/train_step.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/partitioner.h"
#include "engine/util/error.h"

namespace shardlab::runtime {

void Preflight::throw_first() const {
  if (errors.empty()) return;
  if (out_of_memory == 0) throw backends::OutOfMemory(errors.front());
  throw Error(errors.front());
}

namespace {

// The Input node's and the loss output's global shapes, when the graph inferred them.
bool model_ends(const project::Project& p, const graph::GraphReport& report, Shape& input, Shape& output) {
  const auto in = std::find_if(report.nodes.begin(), report.nodes.end(), [](const graph::NodeReport& n) { return n.type == "Input"; });
  const graph::NodeReport* out = report.find(p.loss.output);
  if (in == report.nodes.end() || !in->inferred() || !out || !out->inferred()) return false;
  input = in->output.shape;
  output = out->output.shape;
  return true;
}

}  // namespace

Preflight preflight(const project::Project& p, const backends::Backend& backend, const PreflightOptions& o) {
  Preflight f;
  auto add_problem = [&f](Diagnostic d) {
    if (std::find(f.errors.begin(), f.errors.end(), d.message) != f.errors.end()) return;
    if (d.reason.empty()) d.reason = d.message;
    f.errors.push_back(d.message);
    f.problems.push_back(std::move(d));
  };
  auto add = [&](std::string code, std::string field, const std::string& message, std::vector<std::string> nodes = {}) {
    Diagnostic d = make_diagnostic(Severity::Error, std::move(code), std::move(field), message);
    d.nodes = std::move(nodes);
    add_problem(std::move(d));
  };
  graph::GraphReport report;
  try {
    report = project::analyze_project(p);
  } catch (const std::exception& e) {
    add("project", "", e.what());
    return f;
  }
  for (const Diagnostic& d : report.problems) add_problem(d);
  if (p.loss.output.empty())
    add("loss.output", "loss.output", p.display_name() + ": loss.output: not set: name the node whose output the loss reads");
  else if (!p.graph.find(p.loss.output))
    add("loss.output", "loss.output", p.display_name() + ": loss.output: there is no node '" + p.loss.output + "'");
  const bool graph_ok = f.errors.empty();

  // The mesh and the rules: each checked on its own, so one bad field does not hide the other.
  bool mesh_ok = false, rules_ok = false;
  try {
    f.mesh = o.mesh.empty() ? sharding::project_mesh(p) : sharding::parse_mesh(o.mesh);
    mesh_ok = true;
    if (o.devices > 0) sharding::check_device_count(f.mesh, o.devices);
  } catch (const std::exception& e) {
    add("mesh", "mesh", e.what());
  }
  try {
    f.rules = o.rules.empty() ? sharding::project_rules(p) : sharding::parse_rules(o.rules);
    rules_ok = true;
  } catch (const std::exception& e) {
    add("rules", "logical_axis_rules", e.what());
  }
  if (mesh_ok && rules_ok)
    for (const std::string& e : sharding::unknown_rule_axes(
             f.rules, f.mesh, o.rules.empty() ? p.display_name() + ": logical_axis_rules" : "rules '" + o.rules + "'"))
      add("rules.unknown_axis", "logical_axis_rules", e);
  try {  // the field on its own, so its error comes before the layouts'
    sharding::parse_fallback(p.constraint_fallback, p.display_name() + ": constraint_fallback");
  } catch (const std::exception& e) {
    add("constraint_fallback", "constraint_fallback", e.what());
  }

  // Every array's layout, then the partitioned step and what each device must hold. The report
  // partitions the step itself once every layout divides (one model: the plan shown is the plan
  // checked); a caller that already has it for this mesh and these rules passes it in.
  if (graph_ok && f.errors.empty()) {
    std::optional<sharding::ShardingReport> own;
    const sharding::ShardingReport& layouts =
        o.layouts ? *o.layouts : own.emplace(sharding::analyze_sharding(p, report, f.mesh, f.rules));
    for (const Diagnostic& d : layouts.diagnostics)
      if (d.severity == Severity::Error) add_problem(d);
    if (f.errors.empty() && layouts.plan) try {
        const sharding::PartitionedStep& part = *layouts.plan;
        f.planned = true;
        f.step = layouts.step;
        f.plan = layouts.plan;
        f.need_bytes = double(part.memory.total_bytes());
        f.capacity_bytes = double(backend.capacity_per_device(int(f.mesh.device_count())));
        backends::LoadOptions lo;
        lo.what = "the training step";  // as the session names it when it loads the step
        if (const auto why = backend.refusal(part.program))
          add_problem(make_diagnostic(Severity::Error, "backend", "mesh", *why,
                                      "run this layout on another backend, or change the rules that ask for what it cannot run"));
        if (const auto refusal = backend.check_fits(part.program, part.memory, f.mesh, lo)) {
          f.out_of_memory = int(f.errors.size());
          add_problem(make_diagnostic(
              Severity::Error, "memory", "mesh", refusal->what(),
              "split the largest arrays over more devices (a larger mesh, or rules that shard them), or a smaller batch"));
        }
      } catch (const std::exception& e) {
        add("layout.plan", "logical_axis_rules", e.what());
      }
  }

  Shape input, output;
  if (o.data && model_ends(p, report, input, output)) {
    try {
      for (Diagnostic& d : data_fit_problems(p, data::probe_dataset(p.data, data_base_dir(p)), input, output)) add_problem(std::move(d));
    } catch (const std::exception& e) {
      add("data", "data", e.what());
    }
  }
  return f;
}

}  // namespace shardlab::runtime
