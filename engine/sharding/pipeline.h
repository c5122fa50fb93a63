// Pipeline parallelism over a mesh axis: a rule mapping the logical axis `layer` (a Repeat's stacked
// parameters) to a mesh axis splits the Repeat's layers into that axis's stages, layers
// [s*L/S, (s+1)*L/S) on stage s. Every device still runs one program (SPMD), but each instruction
// names the stage whose devices run it (ir::Instr::stage); activations and their gradients move
// between stages by Send/Recv, and the instructions are ordered so that each stage works through
// its microbatches in the schedule's order (GPipe, or 1F1B as in Megatron-LM / PipeDream-Flush).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/program.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/mesh.h"

namespace shardlab::sharding {

enum class PipelineSchedule { GPipe, OneFOneB };
// "gpipe" or "1f1b"; errors name `where`.
PipelineSchedule parse_pipeline_schedule(const std::string& text, const std::string& where);
const char* pipeline_schedule_name(PipelineSchedule s);

struct Pipeline {
  std::string axis;    // empty: no pipeline
  int64_t stages = 1;  // the axis's size
  bool on() const { return stages > 1; }
};
// The mesh axis the rules map `layer` to, when it splits the mesh; an Error names the rule when
// `layer` maps to several axes at once.
Pipeline pipeline_of(const LogicalRules& rules, const Mesh& mesh);

// The share of a step each stage idles in the pipeline's fill and drain: (S-1)/(M+S-1).
double bubble_fraction(int64_t stages, int64_t microbatches);

// A stage for every instruction of a global step (before partitioning), or kEveryStage, or kSplit
// for the Unstack of a stacked parameter and the Stack of its gradient (each stage handles its own
// layers' block). A Repeat layer's instructions, forward and VJP, go to that layer's stage; other
// instructions to the latest stage among their operands', or, where every operand is everywhere,
// to the earliest stage that reads them. Throws an Error naming the parameter whose layers do not
// divide among the stages.
constexpr int64_t kEveryStage = -1;
constexpr int64_t kSplit = -2;
std::vector<int64_t> assign_stages(const ir::Program& global, int64_t stages, const std::string& axis);

// Reorders a partitioned pipeline program so each stage runs its microbatches in the schedule's
// order: GPipe runs every forward pass, then every backward pass; 1F1B runs S-s-1 forwards on stage
// s, then alternates one forward with one backward, so at most S-s microbatches' activations are
// live on it. Every data dependence, and every send before its recv, is kept.
void schedule_pipeline(ir::Program& local, PipelineSchedule schedule, int64_t microbatches);

}  // namespace shardlab::sharding
