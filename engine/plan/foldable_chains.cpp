#include "engine/plan/foldable_chains.h"

namespace shardlab::plan {

std::vector<ir::EpilogueChain> foldable_chains(const ir::Program& p, const MemoryPlan& plan) {
  std::vector<ir::EpilogueChain> kept;
  for (ir::EpilogueChain& c : ir::find_epilogue_chains(p)) {
    const int64_t mm = plan.arena_offset[size_t(p.instrs[c.matmul].out[0])];
    // In a pipeline, a chain folds only within one stage's instructions.
    bool one_stage = true;
    for (size_t f : c.folded) one_stage = one_stage && p.instrs[f].stage == p.instrs[c.matmul].stage;
    if (mm >= 0 && plan.arena_offset[size_t(c.out)] == mm && one_stage) kept.push_back(std::move(c));
  }
  return kept;
}

}  // namespace shardlab::plan
