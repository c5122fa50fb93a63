// What varies from one step to the next without changing the program.
#pragma once

#include <cstdint>

namespace shardlab::backends {

struct StepContext {
  int64_t step = 0;            // updates applied so far (Optax's count before this update)
  double learning_rate = 0.0;  // from the schedule at `step`
};

}  // namespace shardlab::backends
