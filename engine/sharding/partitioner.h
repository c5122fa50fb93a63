// The SPMD partitioner: turns the global training step into the program every device of a mesh
// runs on its own blocks, with the collectives that keep it equal to the one-device step.
// Parameters, optimizer state and inputs take their sharding from the logical axis rules; every
// other value gets one by propagation through its primitive's rule (beside its VJP, in
// engine/ir/primitives/); where an operand's sharding
// does not fit, a reshard is inserted (P->S reduce-scatter, P->R all-reduce, S->R all-gather,
// S(a)->S(b) all-to-all, R->S a local slice). For a matmul whose operands disagree, the smaller operand moves (GSPMD).
// A rule mapping `layer` to a mesh axis makes that axis a pipeline (engine/sharding/pipeline.h): each
// instruction runs on its stage's devices, and values cross stages by Send/Recv.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "engine/ir/partition_rule.h"
#include "engine/ir/program.h"
#include "engine/runtime/train_step.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/pipeline.h"

namespace shardlab::sharding {

using Sharding = ir::Layout;

struct CollectiveInfo {
  ir::Op op;
  std::vector<std::string> axes;
  double bytes = 0;   // bytes each device sends or receives, roughly the operand's local size
  std::string value;  // the global value it moves
  std::string node;
};

struct PartitionedStep {
  ir::Program program;            // what every device runs, on local shapes
  std::vector<int> local;         // global value -> local value (-1 where not materialised)
  std::vector<Sharding> sharding; // global value -> layout of its local value
  int input = -1, target = -1, loss = -1, accuracy = -1;  // local values (input, target: the first microbatch's)
  int nonfinite = -1;  // the step's non-finite gradient count under dynamic loss scaling (every device holds it)
  std::vector<int> inputs, targets;                       // every microbatch's, in order
  std::vector<CollectiveInfo> collectives;
  plan::MemoryPlan memory;         // of the local program
  // A pipeline (layer=<axis>): per local value, the stage whose devices hold it, -1 for every device.
  // A parameter kept whole on every stage (outside the Repeats) is current only on the stage that
  // updates it, which `stage` names too. Empty without a pipeline.
  std::vector<int64_t> stage;
  Pipeline pipeline;
  PipelineSchedule schedule = PipelineSchedule::OneFOneB;
  int64_t microbatches = 1;
  // A device of this process's that holds local value `local` (its stage's), or `fallback`.
  int device_holding(int local, const Mesh& mesh, const std::vector<int>& devices) const;
};

// `constraint_fallback`: what a constrained value's logical name without a rule means (Flax's
// RulesFallback for with_logical_constraint): replicated, an error, or left to propagation.
// `update`: whether optimizer state is split over the batch's mesh axes with a sharded weight
// update (engine/sharding/weight_update.h), or kept in its parameter's layout.
enum class WeightUpdate { Sharded, Replicated };
// How many steps partition() has partitioned in this process: what the tests that ask a run or a
// check to compile its step once count.
int64_t partitions_built();

PartitionedStep partition(const runtime::StepProgram& step, const Mesh& mesh, const LogicalRules& rules,
                          Fallback constraint_fallback = Fallback::Unsharded, WeightUpdate update = WeightUpdate::Sharded,
                          PipelineSchedule schedule = PipelineSchedule::OneFOneB);

// The device's block of a global tensor under `s` (whose partial set must be empty), and back.
Tensor local_block(const Tensor& global, const Sharding& s, const Mesh& mesh, int64_t device);
// Where `device`'s block of a global array of shape `global` starts, and its extent, per dimension.
void block_bounds(const Shape& global, const Sharding& s, const Mesh& mesh, int64_t device, Shape& start, Shape& size);
void place_block(Tensor& global, const Tensor& block, const Sharding& s, const Mesh& mesh, int64_t device);

}  // namespace shardlab::sharding
