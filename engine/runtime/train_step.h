// The static training step, like a jitted train_step: forward, loss and metrics, the backward pass
// from each primitive's VJP, and the optimizer update of every parameter; plus its memory plan.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/graph/analysis.h"
#include "engine/ir/program.h"
#include "engine/plan/memory_plan.h"
#include "engine/project/project.h"
#include "engine/util/bytes.h"

namespace shardlab::runtime {

struct ModelParam {
  std::string path;  // "dense1/kernel", "blocks/W1/kernel"
  graph::ParamInfo info;
  int value = -1;
  int grad = -1;           // training step only
  std::vector<int> state;  // optimizer state values (adam: mu, nu; sgd with momentum: trace)
};

struct StepProgram {
  ir::Program program;
  // With gradient accumulation the step has one input and one target per microbatch (`inputs`,
  // `targets`, in batch order: microbatch m is examples [m*B/M, (m+1)*B/M)); `input`, `target`
  // and `output` are the first microbatch's, and `loss` and `accuracy` are the means over all.
  int input = -1, target = -1, output = -1, loss = -1, accuracy = -1;
  // Under dynamic loss scaling: how many gradient elements of the step are inf or NaN (the updates
  // skip where it is not 0); -1 without loss scaling.
  int nonfinite = -1;
  std::vector<int> inputs, targets;
  int64_t microbatches = 1;
  std::vector<ModelParam> params;
  std::map<std::string, int> activations;  // node path -> its output value (a block node: its last layer's)
  plan::MemoryPlan memory;
  double forward_flops = 0;  // of the model's forward pass at this batch size
  double step_flops = 0;     // of the whole program
  int64_t batch = 0;  // examples per step, all microbatches together
};

// `training` false gives the evaluation step: forward (dropout off), loss and metrics, no update.
// The training step runs the project's training.accumulate microbatches (the evaluation step one).
// Both lay out parameters and optimizer state identically, so they can share that storage.
StepProgram build_step(const project::Project& p, const graph::GraphReport& report, int64_t batch, bool training);

// The update primitive an optimizer runs for each parameter (SgdUpdate or AdamUpdate) and its
// attributes: what the step appends after each parameter's last use.
ir::Op update_op(const project::OptimizerSpec& o);
ir::Attrs update_attrs(const project::OptimizerSpec& o);

// A parameter's initial values (a Repeat's stacked layers each on their own key) into `out`.
void initialize_param(const ModelParam& mp, uint64_t seed, float* out);
// The parameter at `path`, or an Error naming it; and every path in order.
const ModelParam& find_param(const StepProgram& s, const std::string& path);
std::vector<std::string> param_paths(const StepProgram& s);

using util::format_bytes;

}  // namespace shardlab::runtime
