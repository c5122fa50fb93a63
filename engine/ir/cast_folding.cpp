#include "engine/ir/cast_folding.h"

#include <algorithm>
#include <vector>

namespace shardlab::ir {

namespace {

bool is_matmul(Op op) { return op == Op::MatMul || op == Op::BatchMatMul; }

}  // namespace

int fold_casts(Program& p, std::map<int, int>* moved) {
  const size_t nv = p.values.size();
  std::vector<std::vector<size_t>> readers(nv);
  for (size_t i = 0; i < p.instrs.size(); ++i)
    for (int v : p.instrs[i].in) readers[size_t(v)].push_back(i);
  std::vector<int> maker(nv, -1);
  for (size_t i = 0; i < p.instrs.size(); ++i)
    for (int v : p.instrs[i].out) maker[size_t(v)] = int(i);
  std::vector<bool> gone(p.instrs.size(), false);
  int folded = 0;
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    Instr& c = p.instrs[i];
    if (c.op != Op::Convert) continue;
    const int x = c.in[0], y = c.out[0];
    const DType from = p.dtype(x), to = p.dtype(y);
    const ValueKind kind = p.values[size_t(x)].kind;
    // (1) float32 -> 16 bit, read only by matmuls, of a value that lives through the step anyway.
    if (from == DType::F32 && is_16bit(to) && kind != ValueKind::Temp && !readers[size_t(y)].empty() &&
        std::all_of(readers[size_t(y)].begin(), readers[size_t(y)].end(), [&](size_t r) {
          const Instr& m = p.instrs[r];
          return is_matmul(m.op) && (!m.attrs.round_operands || *m.attrs.round_operands == to) && !m.attrs.result_dtype;
        })) {
      for (size_t r : readers[size_t(y)]) {
        Instr& m = p.instrs[r];
        for (int& v : m.in)
          if (v == y) v = x;
        m.attrs.round_operands = to;
        readers[size_t(x)].push_back(r);
      }
      gone[i] = true;
      ++folded;
      continue;
    }
    // (2) A matmul's 16-bit product that only this Convert to float32 reads.
    if (is_16bit(from) && to == DType::F32 && readers[size_t(x)].size() == 1) {
      const int at = maker[size_t(x)];
      if (at < 0 || gone[size_t(at)] || !is_matmul(p.instrs[size_t(at)].op) || p.instrs[size_t(at)].attrs.result_dtype) continue;
      Instr& m = p.instrs[size_t(at)];
      m.out[0] = y;
      m.attrs.result_dtype = DType::F32;
      maker[size_t(y)] = at;
      if (moved) (*moved)[x] = y;
      gone[i] = true;
      ++folded;
    }
  }
  std::vector<Instr> kept;
  kept.reserve(p.instrs.size());
  for (size_t i = 0; i < p.instrs.size(); ++i)
    if (!gone[i]) kept.push_back(std::move(p.instrs[i]));
  p.instrs = std::move(kept);
  return folded;
}

}  // namespace shardlab::ir
