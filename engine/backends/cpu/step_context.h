// What varies from one step to the next, or one device to the next, without changing the program.
#pragma once

#include <cstdint>

namespace shardlab::sharding {
class Mesh;
}

namespace shardlab::profiler {
class Trace;
}

namespace shardlab::backends {

class Collectives;

struct StepContext {
  int64_t step = 0;            // updates applied so far (Optax's count before this update)
  double learning_rate = 0.0;  // from the schedule at `step`
  // Dynamic loss scaling: the loss's cotangent, which the gradients carry and the updates divide
  // out (1 without it).
  double loss_scale = 1.0;
  // Set when the program runs on one device of several (an SPMD program with collectives).
  int device = 0;
  const sharding::Mesh* mesh = nullptr;
  Collectives* comm = nullptr;
  // This device's pipeline stage (its coordinate along Program::stage_axis); -1 without a pipeline.
  int64_t stage = -1;
  int stage_axis = -1;  // that axis's index in the mesh
  // Where to record this step's spans and summary (null: not traced).
  profiler::Trace* trace = nullptr;
  double data_wait_us = 0;  // the host's wait for this step's batch, for the summary
};

}  // namespace shardlab::backends
