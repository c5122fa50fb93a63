#include "engine/runtime/preflight.h"

#include <algorithm>

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
  auto add = [&f](const std::string& e) {
    if (std::find(f.errors.begin(), f.errors.end(), e) == f.errors.end()) f.errors.push_back(e);
  };
  graph::GraphReport report;
  try {
    report = project::analyze_project(p);
  } catch (const std::exception& e) {
    add(e.what());
    return f;
  }
  for (const std::string& e : report.errors) add(e);
  if (!p.graph.find(p.loss.output)) add("loss.output: there is no node '" + p.loss.output + "'");
  const bool graph_ok = f.errors.empty();

  // The mesh and the rules: each checked on its own, so one bad field does not hide the other.
  bool mesh_ok = false, rules_ok = false;
  try {
    f.mesh = o.mesh.empty() ? sharding::project_mesh(p) : sharding::parse_mesh(o.mesh);
    mesh_ok = true;
    if (o.devices > 0) sharding::check_device_count(f.mesh, o.devices);
  } catch (const std::exception& e) {
    add(e.what());
  }
  try {
    f.rules = o.rules.empty() ? sharding::project_rules(p) : sharding::parse_rules(o.rules);
    rules_ok = true;
  } catch (const std::exception& e) {
    add(e.what());
  }
  if (mesh_ok && rules_ok)
    for (const std::string& e : sharding::unknown_rule_axes(
             f.rules, f.mesh, o.rules.empty() ? p.display_name() + ": logical_axis_rules" : "rules '" + o.rules + "'"))
      add(e);
  sharding::Fallback fallback = sharding::Fallback::Unsharded;
  try {
    fallback = sharding::parse_fallback(p.constraint_fallback, p.display_name() + ": constraint_fallback");
  } catch (const std::exception& e) {
    add(e.what());
  }

  // Every array's layout, then the partitioned step and what each device must hold.
  if (graph_ok && f.errors.empty()) {
    for (const std::string& e : sharding::analyze_sharding(p, report, f.mesh, f.rules).errors) add(e);
    if (f.errors.empty()) try {
        const StepProgram step = build_step(p, report, p.training.batch_size, true);
        const sharding::PartitionedStep part = sharding::partition(step, f.mesh, f.rules, fallback);
        f.planned = true;
        f.need_bytes = double(part.memory.total_elems()) * sizeof(float);
        f.capacity_bytes = double(backend.capacity_per_device(int(f.mesh.device_count())));
        backends::LoadOptions lo;
        lo.what = "the training step";  // as the session names it when it loads the step
        if (const auto refusal = backend.check_fits(part.program, part.memory, f.mesh, lo)) {
          f.out_of_memory = int(f.errors.size());
          add(refusal->what());
        }
      } catch (const std::exception& e) {
        add(e.what());
      }
  }

  Shape input, output;
  if (o.data && model_ends(p, report, input, output)) try {
      for (const std::string& e : data_fit_problems(p, data::probe_dataset(p.data, data_base_dir(p)), input, output)) add(e);
    } catch (const std::exception& e) {
      add(e.what());
    }
  return f;
}

}  // namespace shardlab::runtime
