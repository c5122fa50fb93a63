// The design-time sharding of a whole project: for every parameter, optimizer state, gradient,
// activation and input, its logical axes, PartitionSpec under the mesh and rules, shard shape and
// bytes per device; per-device memory; and the warnings a user needs before anything runs
// (unmatched logical names, indivisible dimensions, unused mesh axes, replicated giants).
#pragma once

#include <string>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/sharding/logical_rules.h"

namespace shardlab::sharding {

enum class ArrayKind { Parameter, OptimizerState, Gradient, Activation, Input };
const char* kind_name(ArrayKind k);

struct ArraySharding {
  std::string name;  // "dense1/kernel", "dense1/kernel/mu", "d_dense1/kernel", "dense1" (activation)
  ArrayKind kind = ArrayKind::Parameter;
  std::vector<std::string> logical;
  Shape shape;
  PartitionSpec spec;
  Shape shard;
  double bytes_per_device = 0;
  std::string error;  // indivisible dimension, axis used twice, ...
};

struct DeviceMemory {
  double params = 0, opt_state = 0, grads = 0, activations = 0;
  double total() const { return params + opt_state + grads + activations; }
};

struct ShardingReport {
  Mesh mesh;
  LogicalRules rules;
  std::vector<ArraySharding> arrays;
  std::vector<DeviceMemory> devices;  // one per device of the mesh
  std::vector<std::string> warnings;
  std::vector<std::string> errors;
  const ArraySharding* find(const std::string& name) const;
};

// Every array of the project's training step under `mesh` and `rules`.
ShardingReport analyze_sharding(const project::Project& p, const graph::GraphReport& report, const Mesh& mesh,
                                const LogicalRules& rules);

// The project's own mesh and rules (its "mesh" and "logical_axis_rules"), checked.
Mesh project_mesh(const project::Project& p);
LogicalRules project_rules(const project::Project& p);

// Arrays of at least this many bytes replicated over a mesh of several devices get a warning.
inline constexpr double kReplicatedGiantBytes = 16.0 * 1024 * 1024;

}  // namespace shardlab::sharding
