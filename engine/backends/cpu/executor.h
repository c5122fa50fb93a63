// Runs a step program on the CPU: one arena for the step's temporaries (allocated once, laid out by
// the memory plan) and one block for parameters and optimizer state that persists across steps.
// Values keep their dtype in memory (16-bit activations take half the bytes); kernels compute in
// float (T), so a 16-bit or int32 operand is staged: converted into a float working copy before the
// kernel and back after it (the plan's staging_bytes), except for matmul operands, which the GEMM
// converts as it packs them, and data that collectives move as it is.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "engine/backends/cpu/step_context.h"
#include "engine/ir/program.h"
#include "engine/plan/memory_plan.h"
#include "engine/util/aligned_allocator.h"
#include "engine/util/zeroed_pages.h"

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
  // T = double (the tests' reference) holds float32 values as double: it lays every value out in
  // a place of its own rather than by the plan, whose offsets are for 4-byte floats.
  Executor(const ir::Program& program, plan::MemoryPlan plan, bool fuse = true, const Executor* share_persistent = nullptr);

  // Storage of a float32 value (parameter, state, input, or a temporary after the step ran), held
  // as T; an Error for a value of another dtype.
  T* data(int value);
  const T* data(int value) const;
  // Storage of any value, in held(its dtype).
  void* raw(int value);
  const void* raw(int value) const;
  // A value's elements converted from or to T, whatever its dtype (int32 rounds to nearest).
  void write(int value, const T* from);
  void read(int value, T* to) const;
  // How this executor holds a value of dtype d: float32 as T, every other dtype as itself.
  static DType held(DType d);

  const ir::Program& program() const { return program_; }
  const plan::MemoryPlan& memory_plan() const { return plan_; }

  void run(const StepContext& ctx);
  // How many instructions were folded into a GEMM's epilogue.
  size_t fused_instructions() const;
  // Seconds the last run() spent in collectives (waiting for peers included).
  double last_comm_seconds() const { return comm_seconds_; }

  // Holds `values` (float32 parameters; engine/backends/cpu/shared_replicas.h) in `owner`'s storage
  // rather than its own, and gathers them in place with a barrier: the owner holds the one copy
  // that every virtual device updates block by block. The owner calls it too (with itself). An
  // executor later built to share this one's persistent state shares these values the same way.
  void share_replicas(Executor& owner, const std::vector<int>& values);

  // Bytes this executor allocated: its arena and staging, and its persistent block unless shared.
  int64_t allocated_bytes() const { return int64_t(arena_.size() + own_persistent_.size() + staging_.size() * sizeof(T)); }

 private:
  const ir::Program& program_;
  plan::MemoryPlan plan_;
  // 64-byte aligned, so vector loads never straddle cache lines at a buffer's start.
  using Bytes = std::vector<std::byte, util::AlignedAllocator<std::byte>>;
  Bytes arena_;
  // Zeroed by the kernel, so pages a device never touches (its copy of a shared replica) cost nothing.
  util::ZeroedPages* persistent_;
  util::ZeroedPages own_persistent_;
  std::vector<T, util::AlignedAllocator<T>> staging_;  // float working copies of staged operands
  // Where each value lives: byte offsets into the arena or the persistent block (-1 in the other).
  std::vector<int64_t> arena_at_, persistent_at_;
  // Shared replicas: per value, whether it lives at its persistent offset in `replica_block_` (the
  // owner's persistent block) instead of in persistent_; by offset, so that executors sharing
  // persistent state (whose value numbers differ) agree.
  std::vector<char> replica_;
  std::vector<int64_t> replica_offsets_;  // sorted
  util::ZeroedPages* replica_block_ = nullptr;
  void mark_replicas();

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
  void lay_out_each_value_alone();
  void run_matmul_step(const Step& step, const ir::Instr& ins);
  void run_staged(const ir::Instr& ins, const StepContext& ctx);
  void run_convert(const ir::Instr& ins);
};

// Sets the number of threads the kernels (and Eigen's GEMM) use.
void set_threads(int threads);
int default_threads();

}  // namespace shardlab::backends::cpu
