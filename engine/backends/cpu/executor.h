// Runs a step program on the CPU: one arena for the step's temporaries (allocated once, laid out by
// the memory plan) and one block for parameters and optimizer state that persists across steps.
#pragma once

#include <vector>

#include "engine/backends/cpu/step_context.h"
#include "engine/ir/program.h"
#include "engine/plan/memory_plan.h"

namespace shardlab::backends::cpu {

template <class T>
class Executor {
 public:
  Executor(const ir::Program& program, plan::MemoryPlan plan);

  // Storage of any planned value (parameter, state, input, or a temporary after the step ran).
  T* data(int value);
  const T* data(int value) const;
  const ir::Program& program() const { return program_; }
  const plan::MemoryPlan& memory_plan() const { return plan_; }

  void run(const StepContext& ctx);

  // Gives parameters and optimizer state to another executor built from the same model (the eval
  // program shares them with the training program instead of copying).
  void share_persistent_with(Executor& other) const;

 private:
  const ir::Program& program_;
  plan::MemoryPlan plan_;
  std::vector<T> arena_;
  std::vector<T>* persistent_;
  std::vector<T> own_persistent_;
};

// Sets the number of threads the kernels (and Eigen's GEMM) use.
void set_threads(int threads);
int default_threads();

}  // namespace shardlab::backends::cpu
