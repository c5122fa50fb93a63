// Buffer plan from liveness: every temporary, input and target of a step gets an offset in one
// arena, reused once its value is dead, so the step's memory is known before anything runs.
// Parameters and optimizer state are persistent and sit in their own block.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/ir/program.h"

namespace shardlab::plan {

// Every size and offset is in bytes: a value takes its elements times its dtype's size, rounded up
// to 4 bytes so that float32 values after a 16-bit one stay aligned.
struct MemoryPlan {
  // Byte offsets; a value is either in the arena or in persistent storage (-1 in the other).
  std::vector<int64_t> arena_offset;
  std::vector<int64_t> persistent_offset;
  int64_t arena_bytes = 0;       // peak of simultaneously live temporaries, inputs and targets
  int64_t param_bytes = 0;
  int64_t opt_state_bytes = 0;
  int64_t input_bytes = 0;       // inputs and targets (included in arena_bytes)
  int64_t naive_temp_bytes = 0;  // every temporary held at once: what the plan saves against
  // Where a backend computes 16-bit and int32 values in float32 (the CPU): the largest float32
  // working copy one instruction needs (staging_elems), held once beside the arena. 0 for a
  // program of float32 values only.
  int64_t staging_bytes = 0;
  // A pipelined program (Program::stages > 1): each stage's devices run only their instructions, so
  // a buffer is live only on the stages that use it, and two buffers share arena space unless they
  // are live at once on the same stage. The arena's peak on each stage's devices (arena_bytes is
  // their largest); empty without a pipeline.
  std::vector<int64_t> stage_arena_bytes;

  int64_t total_bytes() const { return arena_bytes + staging_bytes + param_bytes + opt_state_bytes; }
};

// Bytes a value takes in a plan: its own, rounded up to a multiple of 4.
int64_t planned_bytes(const ir::Program& p, int v);

// Float32 elements a backend that computes 16-bit and int32 values in float32 copies `ins`'s
// operands and results into and out of: every one that is not float32, except what moves as it is
// (collectives, Convert, Reshape) and a matmul's operands (converted while packed). An elementwise
// instruction is staged a chunk at a time (staging_chunk), so only a chunk of each counts.
int64_t staging_elems(const ir::Program& p, const ir::Instr& ins);

// Elementwise instructions whose operands and results have one size (staged kStagingChunk
// elements at a time), and those that add or multiply a row (BiasAdd, MulRow: staged whole rows,
// about kStagingChunk elements at a time, their row whole).
inline constexpr int64_t kStagingChunk = 16384;
enum class Staging { Whole, Pointwise, Rows };
Staging staging_of(ir::Op op);
// Whether `ins` stages its operand k (k < ins.in.size()) or result k - ins.in.size().
bool stages_operand(const ir::Program& p, const ir::Instr& ins, size_t k);
// The elements of one chunk of `ins` (a Rows instruction's: whole rows), or of all of it.
int64_t staging_chunk(const ir::Program& p, const ir::Instr& ins);

// `keep` are values read after the step (loss, metrics): they stay live to the end.
// In-place reuse: an elementwise result may take its operand's buffer when that operand dies there,
// and a Stack's operands read by it alone are made inside its result (the Stack then copies each
// onto itself: a Repeat's per-layer gradients are written where the stacked gradient holds them).
MemoryPlan plan_memory(const ir::Program& p, const std::vector<int>& keep);

}  // namespace shardlab::plan
