// The optimizer and learning-rate schedule a project asks for, with Optax's definitions.
#pragma once

#include <cstdint>
#include <string>

#include "engine/graph/graph.h"

namespace shardlab::project {

struct ScheduleSpec {
  std::string type = "constant";  // constant | warmup_cosine_decay
  double value = 1e-3;            // constant
  // optax.warmup_cosine_decay_schedule: linear init -> peak over warmup_steps, then cosine decay to
  // end_value, reached at decay_steps (which counts the warmup too).
  double init_value = 0, peak_value = 1e-3, end_value = 0;
  int64_t warmup_steps = 0, decay_steps = 1;

  double at(int64_t step) const;  // the learning rate for Optax's update count `step`
};

struct OptimizerSpec {
  std::string type = "adam";  // sgd | adam | adamw
  ScheduleSpec learning_rate;
  double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  double weight_decay = 0.0;  // adamw (Optax's default 1e-4)
  double momentum = 0.0;      // sgd
  bool nesterov = false;      // sgd
};

// `where` prefixes every error ("file.shardlab.json: optimizer").
OptimizerSpec parse_optimizer(const graph::Json& j, const std::string& where);

}  // namespace shardlab::project
