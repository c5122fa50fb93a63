// The design-time check an editor runs on every edit: shapes of every node, then how every array
// splits over the project's mesh under its rules, per-device memory against the device's capacity,
// and every warning and error, each naming its node, array or field; its errors include everything
// `train` would refuse (runtime::preflight: rules naming unknown axes, memory, the data source
// against the model). It never throws: a project mid-edit is allowed to be wrong, and the report
// says where.
#pragma once

#include <string>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/sharding/layout.h"

namespace shardlab::api {

struct Design {
  graph::GraphReport graph;
  bool sharding_ok = false;              // the mesh and rules parsed and every node inferred
  sharding::ShardingReport sharding;     // valid when sharding_ok
  double device_capacity_bytes = 0;      // memory one device may use
  std::vector<std::string> errors;       // anything that stops training: graph, loss, mesh, rules, layouts, memory, data
  std::vector<std::string> warnings;     // legal but probably not meant (unused axes, no rule, won't fit ...)
  bool ok() const { return errors.empty(); }
};

// Under the project's own mesh and rules.
Design check_design(const project::Project& p);

// Memory one CPU virtual device may use: the machine's physical memory shared by `devices`.
double cpu_device_capacity_bytes(int64_t devices);

}  // namespace shardlab::api
