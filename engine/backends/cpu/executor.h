// Runs a step program on the CPU: one arena for the step's temporaries (allocated once, laid out by
// the memory plan) and one block for parameters and optimizer state that persists across steps.
#pragma once

#include <memory>
#include <vector>

#include "engine/backends/cpu/step_context.h"
#include "engine/ir/program.h"
#include "engine/plan/memory_plan.h"
#include "engine/util/aligned_allocator.h"

namespace shardlab::profiler {
struct SpanArrays;
}

namespace shardlab::backends::cpu {

template <class T>
class Executor {
 public:
  // `fuse`: fold elementwise instructions into the GEMMs that feed them (off only to test it).
  // `share_persistent`: use that executor's parameters and optimizer state (built from the same
  // model, e.g. the evaluation step beside the training step) instead of allocating them.
  Executor(const ir::Program& program, plan::MemoryPlan plan, bool fuse = true, const Executor* share_persistent = nullptr);

  // Storage of any planned value (parameter, state, input, or a temporary after the step ran).
  T* data(int value);
  const T* data(int value) const;
  const ir::Program& program() const { return program_; }
  const plan::MemoryPlan& memory_plan() const { return plan_; }

  void run(const StepContext& ctx);
  // How many instructions were folded into a GEMM's epilogue.
  size_t fused_instructions() const;
  // Seconds the last run() spent in collectives (waiting for peers included).
  double last_comm_seconds() const { return comm_seconds_; }

  // Elements this executor allocated: its arena, and its persistent block unless shared.
  int64_t allocated_elems() const { return int64_t(arena_.size() + own_persistent_.size()); }

 private:
  const ir::Program& program_;
  plan::MemoryPlan plan_;
  // 64-byte aligned, so vector loads never straddle cache lines at a buffer's start.
  using Buffer = std::vector<T, util::AlignedAllocator<T>>;
  Buffer arena_;
  Buffer* persistent_;
  Buffer own_persistent_;

  // The program as executed: one instruction each, or a MatMul with the instructions after it
  // that were folded into its epilogue.
  struct Step {
    size_t instr = 0;
    size_t folded = 0;  // later instructions this step also performs (skipped where they stand)
    std::vector<size_t> folded_instrs;
    int bias = -1;      // value added per row
    bool relu = false;
    int mask = -1;      // relu_grad's activation
    int out = -1;       // where the fused result goes
  };
  std::vector<Step> steps_;
  // Per step of steps_: what a trace records (computed once).
  struct StepInfo {
    int category = 0;  // profiler::Category
    double flops = 0, bytes = 0, live_bytes = 0;
    std::string name;
    std::string array;                                   // Span::array
    std::shared_ptr<const profiler::SpanArrays> arrays;  // shared by this step's spans
  };
  std::vector<StepInfo> info_;
  void describe_steps();
  std::vector<bool> folded_away_;  // per instruction: performed by an earlier step
  double comm_seconds_ = 0;
  void plan_fusion();
};

// Sets the number of threads the kernels (and Eigen's GEMM) use.
void set_threads(int threads);
int default_threads();

}  // namespace shardlab::backends::cpu
