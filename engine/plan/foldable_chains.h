// Which of the IR's epilogue chains (ir::find_epilogue_chains) a backend's GEMM may fold under a
// memory plan: those whose result the plan put in the MatMul's own buffer. Writing the chain's
// result at the MatMul's place is then safe: that buffer is the MatMul's output, live from there
// on, so it cannot overlap the GEMM's operands or a value that an update the chain steps over
// still reads. Both the CPU and the CUDA backends fold only these.
#pragma once

#include <vector>

#include "engine/ir/fusion.h"
#include "engine/plan/memory_plan.h"

namespace shardlab::plan {

std::vector<ir::EpilogueChain> foldable_chains(const ir::Program& p, const MemoryPlan& plan);

}  // namespace shardlab::plan
