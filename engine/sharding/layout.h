// The design-time sharding of a whole project: for every parameter, optimizer state, gradient,
// activation and input, its logical axes, PartitionSpec under the mesh and rules, shard shape and
// bytes per device; per-device memory; the collectives; and the warnings a user needs before
// anything runs (unmatched logical names, indivisible dimensions, unused mesh axes, replicated
// giants). One model: once every layout divides, the training step is partitioned for real and
// every layout, shard, byte count and collective shown is read from that plan, the one `train` runs.
#pragma once

#include <string>
#include <vector>

#include <memory>

#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/partitioner.h"
#include "engine/util/diagnostic.h"

namespace shardlab::sharding {

enum class ArrayKind { Parameter, OptimizerState, Gradient, Activation, Input };
const char* kind_name(ArrayKind k);

struct ArraySharding {
  std::string name;
  std::string node;  // the node whose parameter or output it is ("dense1", "blocks/W1")  // "dense1/kernel", "dense1/kernel/mu", "d_dense1/kernel", "dense1" (activation)
  ArrayKind kind = ArrayKind::Parameter;
  std::vector<std::string> logical;
  Shape shape;
  PartitionSpec spec;
  Shape shard;
  DType dtype = DType::F32;  // as the step holds it (the precision policy's)
  double bytes_per_device = 0;
  // Mesh axes whose sum is still pending where the step produces this array (a gradient before its
  // reduce-scatter): each device holds a partial sum of the whole block.
  std::vector<std::string> pending_sum;
  std::string error;  // indivisible dimension, axis used twice, ...

  // "PartitionSpec('data', None)", and " +sum(model)" where a sum is pending: what `shard`, the
  // Mesh & Rules arrays and the Sharding tab all show, so a partial sum never reads as replicated.
  std::string spec_text() const;
};

// What one device holds during a training step, from the partitioned step's buffer plan: the
// parameters' and optimizer state's blocks, which live across steps, and the step's arena, where
// inputs, activations, gradients and temporaries take turns (a buffer is reused once its value is
// dead, so the arena is the peak of what is live at once, not the sum of every array).
struct DeviceMemory {
  double params = 0, opt_state = 0, arena = 0;
  double total() const { return params + opt_state + arena; }
};

struct ShardingReport {
  Mesh mesh;
  LogicalRules rules;
  std::vector<ArraySharding> arrays;
  std::vector<DeviceMemory> devices;  // one per device of the mesh
  std::vector<std::string> warnings;  // the messages of `diagnostics`, by severity
  std::vector<std::string> errors;
  std::vector<Diagnostic> diagnostics;  // each problem as data: its arrays, their nodes, the field, the fix
  // The partitioned training step everything above was read from; null while a layout is in error
  // (then the arrays show their layouts as the rules give them, and the errors say why).
  std::shared_ptr<const PartitionedStep> plan;
  std::shared_ptr<const runtime::StepProgram> step;  // the global training step `plan` partitions (with it)
  // Gradient accumulation: the step runs the batch as this many microbatches, and the inputs and
  // activations above are one microbatch's (their shapes are the microbatch's).
  int64_t microbatches = 1;
  // Pipeline stages (a rule layer=<mesh axis>): per stage, the layers it holds ("embed",
  // "blocks[0:4]") and its devices' step arena; the schedule; and the share of the step each stage
  // idles while the pipeline fills and drains, (S-1)/(M+S-1). Empty without a pipeline.
  struct Stage {
    std::vector<std::string> layers;
    double arena = 0;
  };
  std::vector<Stage> stages;
  std::string pipeline_axis, pipeline_schedule;
  double bubble = 0;
  const ArraySharding* find(const std::string& name) const;
};

// Every array of the project's training step under `mesh` and `rules`, at the project's batch size
// and with its constraint fallback.
ShardingReport analyze_sharding(const project::Project& p, const graph::GraphReport& report, const Mesh& mesh,
                                const LogicalRules& rules);

// The project's own mesh and rules (its "mesh" and "logical_axis_rules"), checked.
Mesh project_mesh(const project::Project& p);
LogicalRules project_rules(const project::Project& p);

// Arrays of at least this many bytes replicated over a mesh of several devices get a warning.
inline constexpr double kReplicatedGiantBytes = 16.0 * 1024 * 1024;

}  // namespace shardlab::sharding
