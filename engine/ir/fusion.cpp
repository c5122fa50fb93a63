#include "engine/ir/fusion.h"

#include <algorithm>
#include <optional>

namespace shardlab::ir {

std::vector<EpilogueChain> find_epilogue_chains(const Program& p) {
  const auto& ins = p.instrs;
  std::vector<int> uses(p.values.size(), 0);
  for (const Instr& i : ins)
    for (int v : i.in) ++uses[size_t(v)];
  auto is_update = [](const Instr& i) { return i.op == Op::AdamUpdate || i.op == Op::SgdUpdate; };
  // The instruction that reads `v` next after `from`, if only updates that leave its inputs alone stand between.
  auto next_reader = [&](size_t from, int v) -> std::optional<size_t> {
    for (size_t j = from + 1; j < ins.size(); ++j) {
      if (std::find(ins[j].in.begin(), ins[j].in.end(), v) != ins[j].in.end()) {
        for (size_t k = from + 1; k < j; ++k)
          for (int w : ins[k].in)
            if (std::find(ins[j].in.begin(), ins[j].in.end(), w) != ins[j].in.end()) return std::nullopt;
        return j;
      }
      if (!is_update(ins[j])) return std::nullopt;
    }
    return std::nullopt;
  };
  std::vector<EpilogueChain> chains;
  for (size_t i = 0; i < ins.size(); ++i) {
    // A product rounded into float32 storage (a folded cast) rounds before any epilogue would run.
    if (ins[i].op != Op::MatMul || uses[size_t(ins[i].out[0])] != 1 || ins[i].attrs.result_dtype) continue;
    const int m = ins[i].out[0];
    const auto j = next_reader(i, m);
    if (!j) continue;
    EpilogueChain c;
    c.matmul = i;
    const Instr& next = ins[*j];
    if (next.op == Op::BiasAdd && next.in[0] == m) {
      c.folded.push_back(*j);
      c.bias = next.in[1];
      c.out = next.out[0];
      const auto r = uses[size_t(c.out)] == 1 ? next_reader(*j, c.out) : std::nullopt;
      if (r && ins[*r].op == Op::Relu) {
        c.folded.push_back(*r);
        c.relu = true;
        c.out = ins[*r].out[0];
      }
    } else if (next.op == Op::ReluGrad && next.in[1] == m) {
      c.folded.push_back(*j);
      c.mask = next.in[0];
      c.out = next.out[0];
    } else {
      continue;
    }
    chains.push_back(std::move(c));
  }
  return chains;
}

}  // namespace shardlab::ir
