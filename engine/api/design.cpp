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
bool add_run_refusals(const project::Project& p, Design& d) {
  // One backend for every check: it only answers what a device can hold.
  static const std::unique_ptr<backends::Backend> cpu = backends::make_backend("cpu");
  runtime::PreflightOptions checks;
  checks.data = true;
  const runtime::Preflight f = runtime::preflight(p, *cpu, checks);
  for (const std::string& e : f.errors)
    if (std::find(d.errors.begin(), d.errors.end(), e) == d.errors.end()) d.errors.push_back(e);
  return f.out_of_memory >= 0;
}

// Virtual devices beyond the cores take turns on them: right for checking a layout, but the step
// runs no faster than on one device, which a user reading the speed should know.
void add_shared_cores_warning(const sharding::Mesh& mesh, std::vector<std::string>& warnings) {
  const int64_t cores = std::max<long>(1, sysconf(_SC_NPROCESSORS_ONLN));
  if (mesh.device_count() <= cores) return;
  warnings.push_back("mesh " + mesh.str() + ": its " + std::to_string(mesh.device_count()) +
                     " virtual devices share this machine's " + std::to_string(cores) +
                     (cores == 1 ? " core" : " cores") +
                     " and take turns on them, so a step is slower than on one device; the layout, memory and "
                     "collectives are still those of " + std::to_string(mesh.device_count()) + " devices");
}

}  // namespace

Design check_design(const project::Project& p) {
  Design d;
  try {
    d.graph = project::analyze_project(p);
  } catch (const std::exception& e) {
    d.errors.push_back(e.what());
    return d;
  }
  d.errors = d.graph.errors;
  if (p.loss.output.empty())
    d.errors.push_back("loss.output: not set yet: choose the node whose output the loss reads (Inspector, project page)");
  else if (!p.graph.find(p.loss.output))
    d.errors.push_back("loss.output: there is no node '" + p.loss.output + "'");
  if (!d.graph.ok()) {
    add_run_refusals(p, d);
    return d;
  }
  try {
    const sharding::Mesh mesh = sharding::project_mesh(p);
    const sharding::LogicalRules rules = sharding::project_rules(p);
    d.sharding = sharding::analyze_sharding(p, d.graph, mesh, rules);
    d.sharding_ok = true;
    d.device_capacity_bytes = cpu_device_capacity_bytes(mesh.device_count());
  } catch (const std::exception& e) {
    d.errors.push_back(e.what());
    add_run_refusals(p, d);
    return d;
  }
  for (const std::string& e : d.sharding.errors) d.errors.push_back(e);
  d.warnings = d.sharding.warnings;
  add_shared_cores_warning(d.sharding.mesh, d.warnings);
  if (add_run_refusals(p, d)) return d;  // the refusal says it, with the largest arrays
  for (size_t i = 0; i < d.sharding.devices.size(); ++i) {
    const double need = d.sharding.devices[i].total();
    if (need > d.device_capacity_bytes) {
      d.warnings.push_back("device " + std::to_string(i) + " needs " + runtime::format_bytes(need) + " but has " +
                           runtime::format_bytes(d.device_capacity_bytes) + ": the step will not fit in memory");
      break;  // every device of a mesh holds the same amount; one line says it
    }
  }
  return d;
}

}  // namespace shardlab::api
