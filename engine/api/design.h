// The design-time check an editor runs on every edit: shapes of every node, then how every array
// splits over the project's mesh under its rules (read from the partitioned step itself), per-device
// memory against the device's capacity, and every warning and error as data, each naming its
// nodes, arrays or field and what would fix it; its errors include everything
// `train` would refuse (runtime::preflight: rules naming unknown axes, memory, the data source
// against the model). It never throws: a project mid-edit is allowed to be wrong, and the report
// says where.
#pragma once

#include <string>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/sharding/layout.h"
#include "engine/util/diagnostic.h"

namespace shardlab::api {

struct Design {
  graph::GraphReport graph;
  bool sharding_ok = false;              // the mesh and rules parsed and every node inferred
  sharding::ShardingReport sharding;     // valid when sharding_ok
  double device_capacity_bytes = 0;      // memory one device may use
  // Every problem as data (severity, code, nodes, arrays, field, message, fix), errors first, one
  // per cause: what the editor marks nodes and fields from.
  std::vector<Diagnostic> diagnostics;
  std::vector<std::string> errors;       // the errors' messages: anything that stops training
  std::vector<std::string> warnings;     // the warnings' messages: legal but probably not meant
  bool ok() const { return errors.empty(); }
};

// The diagnostics that concern node `path` ("dense1", "blocks/W1"), errors first.
std::vector<const Diagnostic*> diagnostics_of_node(const Design& d, const std::string& path);

// Under the project's own mesh and rules.
Design check_design(const project::Project& p);

// Memory one CPU virtual device may use: the machine's physical memory shared by `devices`.
double cpu_device_capacity_bytes(int64_t devices);

}  // namespace shardlab::api
