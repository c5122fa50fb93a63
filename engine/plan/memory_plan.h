// Buffer plan from liveness: every temporary, input and target of a step gets an offset in one
// arena, reused once its value is dead, so the step's memory is known before anything runs.
// Parameters and optimizer state are persistent and sit in their own block.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/program.h"

namespace shardlab::plan {

struct MemoryPlan {
  // Element offsets; a value is either in the arena or in persistent storage (-1 in the other).
  std::vector<int64_t> arena_offset;
  std::vector<int64_t> persistent_offset;
  int64_t arena_elems = 0;       // peak of simultaneously live temporaries, inputs and targets
  int64_t param_elems = 0;
  int64_t opt_state_elems = 0;
  int64_t input_elems = 0;       // inputs and targets (included in arena_elems)
  int64_t naive_temp_elems = 0;  // every temporary held at once: what the plan saves against
  // A pipelined program (Program::stages > 1): each stage's devices run only their instructions, so
  // a buffer is live only on the stages that use it, and two buffers share arena space unless they
  // are live at once on the same stage. The arena's peak on each stage's devices (arena_elems is
  // their largest); empty without a pipeline.
  std::vector<int64_t> stage_arena_elems;

  int64_t total_elems() const { return arena_elems + param_elems + opt_state_elems; }
};

// `keep` are values read after the step (loss, metrics): they stay live to the end.
// In-place reuse: an elementwise result may take its operand's buffer when that operand dies there.
MemoryPlan plan_memory(const ir::Program& p, const std::vector<int>& keep);

}  // namespace shardlab::plan
