#include "engine/api/design.h"

#include <unistd.h>

#include <algorithm>
#include <memory>

#include "engine/runtime/preflight.h"
#include "engine/runtime/train_step.h"
#include "engine/util/error.h"

namespace shardlab::api {

double cpu_device_capacity_bytes(int64_t devices) {
  const double total = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  return total / double(devices < 1 ? 1 : devices);
}

namespace {

// What a run would refuse that the layouts above do not show: rules naming axes the mesh lacks, the
// constraint fallback, the training step against its device's memory, and the data source against
// the model (a missing file, a (28, 28) image fed to an Input of (784)). The same checks, in the
// same words, as `train` and `shardlab-cli check` (runtime::preflight).
// Returns whether the step was refused for memory.
bool add_run_refusals(const project::Project& p, Design& d, std::vector<Diagnostic>& out) {
  // One backend for every check: it only answers what a device can hold.
  static const std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu");
  runtime::PreflightOptions checks;
  checks.data = true;
  if (d.sharding_ok) checks.layouts = &d.sharding;  // the plan shown is the plan checked
  const runtime::Preflight f = runtime::preflight(p, *cpu, checks);
  // One problem per cause: what the design's own checks found already (the loss's output, a rule's
  // unknown axis, the mesh: said there once per node or axis, with the arrays it touches) is not
  // said again as the run's refusal of it.
  auto found_already = [&](const std::string& code) {
    return std::any_of(out.begin(), out.end(), [&](const Diagnostic& x) { return x.severity == Severity::Error && x.code == code; });
  };
  for (const Diagnostic& e : f.problems)
    if (!((e.code == "loss.output" || e.code == "rules.unknown_axis" || e.code == "mesh") && found_already(e.code)))
      out.push_back(e);
  return f.out_of_memory >= 0;
}

// Virtual devices beyond the cores take turns on them: right for checking a layout, but the step
// runs no faster than on one device, which a user reading the speed should know.
void add_shared_cores_warning(const sharding::Mesh& mesh, std::vector<Diagnostic>& out) {
  const int64_t cores = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
  if (mesh.device_count() <= cores) return;
  out.push_back(make_diagnostic(
      Severity::Warning, "devices.shared_cores", "mesh",
      "mesh " + mesh.str() + ": its " + std::to_string(mesh.device_count()) + " virtual devices share this machine's " +
          std::to_string(cores) + (cores == 1 ? " core" : " cores") +
          " and take turns on them, so a step is slower than on one device; the layout, memory and collectives are still "
          "those of " + std::to_string(mesh.device_count()) + " devices",
      "fine for checking a layout; for speed, use at most " + std::to_string(cores) + " devices here"));
}

Diagnostic error_at(std::string code, std::string field, std::string message, std::string fix = {}) {
  return make_diagnostic(Severity::Error, std::move(code), std::move(field), std::move(message), std::move(fix));
}

// Errors first, each cause once (the preflight repeats what the graph and the layouts found), and
// the plain message lists beside them.
void finish(Design& d, std::vector<Diagnostic> found) {
  // The step cannot be partitioned without the loss's output node: the partitioner's complaint is
  // that problem again, said worse.
  const bool no_loss_output =
      std::any_of(found.begin(), found.end(), [](const Diagnostic& x) { return x.code == "loss.output" && x.severity == Severity::Error; });
  if (no_loss_output)
    found.erase(std::remove_if(found.begin(), found.end(), [](const Diagnostic& x) { return x.code == "layout.plan"; }), found.end());
  std::stable_partition(found.begin(), found.end(), [](const Diagnostic& x) { return x.severity == Severity::Error; });
  for (Diagnostic& x : found) {
    std::vector<std::string>& list = x.severity == Severity::Error ? d.errors : d.warnings;
    if (std::find(list.begin(), list.end(), x.message) != list.end()) continue;
    list.push_back(x.message);
    d.diagnostics.push_back(std::move(x));
  }
}

}  // namespace

Design check_design(const project::Project& p) {
  Design d;
  std::vector<Diagnostic> found;
  try {
    d.graph = project::analyze_project(p);
  } catch (const std::exception& e) {
    found.push_back(error_at("project", "", e.what()));
    finish(d, std::move(found));
    return d;
  }
  found = d.graph.problems;
  if (p.loss.output.empty())
    found.push_back(error_at("loss.output", "loss.output",
                             "loss.output: not set yet: choose the node whose output the loss reads (Inspector, project page)",
                             "choose the loss's output node on the project page"));
  else if (!p.graph.find(p.loss.output))
    found.push_back(error_at("loss.output", "loss.output", "loss.output: there is no node '" + p.loss.output + "'"));
  if (!d.graph.ok()) {
    add_run_refusals(p, d, found);
    finish(d, std::move(found));
    return d;
  }
  try {
    const sharding::Mesh mesh = sharding::project_mesh(p);
    const sharding::LogicalRules rules = sharding::project_rules(p);
    d.sharding = sharding::analyze_sharding(p, d.graph, mesh, rules);
    d.sharding_ok = true;
    d.device_capacity_bytes = cpu_device_capacity_bytes(mesh.device_count());
  } catch (const std::exception& e) {
    found.push_back(error_at("mesh", "mesh", e.what()));
    add_run_refusals(p, d, found);
    finish(d, std::move(found));
    return d;
  }
  for (const Diagnostic& x : d.sharding.diagnostics) found.push_back(x);
  add_shared_cores_warning(d.sharding.mesh, found);
  if (!add_run_refusals(p, d, found))  // a memory refusal says it already, with the largest arrays
    for (size_t i = 0; i < d.sharding.devices.size(); ++i) {
      const double need = d.sharding.devices[i].total();
      if (need > d.device_capacity_bytes) {
        found.push_back(make_diagnostic(Severity::Warning, "memory", "mesh",
                                        "device " + std::to_string(i) + " needs " + runtime::format_bytes(need) +
                                            " but has " + runtime::format_bytes(d.device_capacity_bytes) +
                                            ": the step will not fit in memory",
                                        "split the largest arrays over more devices, or a smaller batch"));
        break;  // every device of a mesh holds the same amount; one line says it
      }
    }
  finish(d, std::move(found));
  return d;
}

std::vector<const Diagnostic*> diagnostics_of_node(const Design& d, const std::string& path) {
  std::vector<const Diagnostic*> out;
  for (const Diagnostic& x : d.diagnostics)
    if (std::find(x.nodes.begin(), x.nodes.end(), path) != x.nodes.end()) out.push_back(&x);
  return out;
}

}  // namespace shardlab::api
