// A run's settings laid over a project's own (the CLI's flags, the Training tab's form). They are
// applied to both the parsed structs and the sections kept as written, so that what a run saves
// with its checkpoints (checkpoint.json's "project") is what it ran, not the file it was loaded from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/project/project.h"

namespace shardlab::project {

struct RunOverrides {
  int64_t batch_size = 0;                // > 0 replaces training.batch_size
  int64_t accumulate = 0;                // > 0 replaces training.accumulate
  std::string pipeline_schedule;         // non-empty ("gpipe", "1f1b") replaces training.pipeline_schedule
  int64_t seed = -1;                     // >= 0 replaces training.seed
  int64_t steps = -1;                    // >= 0 replaces training.steps
  int64_t epochs = -1;                   // >= 0 replaces training.epochs (and steps becomes 0 unless given)
  std::optional<double> learning_rate;   // a constant schedule's value, or a warmup-cosine schedule's peak
  // Non-empty: replace precision.dtype, precision.param_dtype, precision.matmul_precision.
  std::string dtype, param_dtype, matmul_precision;
};

// Throws Error naming the field for a value the project format would refuse (a negative learning rate).
Project with_overrides(Project p, const RunOverrides& o);

}  // namespace shardlab::project
