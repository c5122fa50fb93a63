#include "engine/api/design.h"

#include <unistd.h>

#include "engine/runtime/train_step.h"
#include "engine/util/error.h"

namespace shardlab::api {

double cpu_device_capacity_bytes(int64_t devices) {
  const double total = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  return total / double(devices < 1 ? 1 : devices);
}

Design check_design(const project::Project& p) {
  Design d;
  try {
    d.graph = project::analyze_project(p);
  } catch (const std::exception& e) {
    d.errors.push_back(e.what());
    return d;
  }
  d.errors = d.graph.errors;
  if (!p.graph.find(p.loss.output)) d.errors.push_back("loss.output: there is no node '" + p.loss.output + "'");
  if (!d.graph.ok()) return d;
  try {
    const sharding::Mesh mesh = sharding::project_mesh(p);
    const sharding::LogicalRules rules = sharding::project_rules(p);
    d.sharding = sharding::analyze_sharding(p, d.graph, mesh, rules);
    d.sharding_ok = true;
    d.device_capacity_bytes = cpu_device_capacity_bytes(mesh.device_count());
  } catch (const std::exception& e) {
    d.errors.push_back(e.what());
    return d;
  }
  for (const std::string& e : d.sharding.errors) d.errors.push_back(e);
  d.warnings = d.sharding.warnings;
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
