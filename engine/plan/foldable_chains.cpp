#include "engine/plan/foldable_chains.h"

namespace shardlab::plan {

std::vector<ir::EpilogueChain> foldable_chains(const ir::Program& p, const MemoryPlan& plan) {
  std::vector<ir::EpilogueChain> kept;
  for (ir::EpilogueChain& c : ir::find_epilogue_chains(p)) {
    const int64_t mm = plan.arena_offset[size_t(p.instrs[c.matmul].out[0])];
    if (mm >= 0 && plan.arena_offset[size_t(c.out)] == mm) kept.push_back(std::move(c));
  }
  return kept;
}

}  // namespace shardlab::plan
