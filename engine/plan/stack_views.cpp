#include "engine/plan/stack_views.h"

#include <algorithm>
#include <set>

namespace shardlab::plan {

namespace {

using ir::Op;

// Whether `ins` writes value v: as a result, or in place (an update's parameter and state, the
// operand an in-place all-gather fills).
bool writes(const ir::Instr& ins, int v) {
  if (std::find(ins.out.begin(), ins.out.end(), v) != ins.out.end()) return true;
  const bool in_place = ins.op == Op::SgdUpdate || ins.op == Op::AdamUpdate || ins.op == Op::AllGatherInPlace;
  return in_place && std::find(ins.in.begin(), ins.in.end(), v) != ins.in.end();
}

struct Liveness {
  // The instruction that makes each value (-1: fed or persistent, live from the start) and the last
  // that reads or writes it (its maker where none does).
  std::vector<int64_t> def, last;
};

Liveness liveness(const ir::Program& p) {
  const size_t n = p.values.size();
  Liveness l{std::vector<int64_t>(n, -1), std::vector<int64_t>(n, -1)};
  std::vector<bool> made(n, false);
  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const ir::Instr& ins = p.instrs[i];
    for (int v : ins.in) l.last[size_t(v)] = int64_t(i);
    for (int v : ins.out) {
      if (!made[size_t(v)] && p.values[size_t(v)].kind == ir::ValueKind::Temp) l.def[size_t(v)] = int64_t(i);
      made[size_t(v)] = true;
      l.last[size_t(v)] = std::max(l.last[size_t(v)], int64_t(i));
    }
  }
  return l;
}

bool in_arena(const MemoryPlan& m, int v) { return m.arena_offset.at(size_t(v)) >= 0 && m.persistent_offset.at(size_t(v)) < 0; }

}  // namespace

size_t StackViews::skipped() const { return size_t(std::count(skip.begin(), skip.end(), true)); }

StackViews stack_views(const ir::Program& p, const MemoryPlan& m) {
  StackViews views;
  views.base.assign(p.values.size(), -1);
  views.offset.assign(p.values.size(), 0);
  views.skip.assign(p.instrs.size(), false);
  if (m.arena_offset.size() != p.values.size() || m.persistent_offset.size() != p.values.size()) return views;
  const Liveness live = liveness(p);
  // A value that already has a base, or is one, takes no other part.
  std::vector<bool> is_base(p.values.size(), false);
  auto taken = [&](int v) { return views.base[size_t(v)] >= 0 || is_base[size_t(v)]; };

  for (size_t i = 0; i < p.instrs.size(); ++i) {
    const ir::Instr& ins = p.instrs[i];
    if (ins.op != Op::Unstack || ins.in.size() != 1 || ins.out.empty()) continue;
    const int x = ins.in[0];
    if (m.persistent_offset[size_t(x)] < 0 || views.base[size_t(x)] >= 0) continue;
    const std::set<int> parts(ins.out.begin(), ins.out.end());
    bool ok = parts.size() == ins.out.size();
    int64_t until = int64_t(i);
    for (int w : ins.out) {
      ok = ok && in_arena(m, w) && !taken(w) && live.def[size_t(w)] == int64_t(i) && p.dtype(w) == p.dtype(x);
      until = std::max(until, live.last[size_t(w)]);
    }
    // Nothing may write a part after the Unstack, nor the parameter while a part is still read.
    for (size_t j = i + 1; ok && j < p.instrs.size() && int64_t(j) <= until; ++j) {
      if (writes(p.instrs[j], x)) ok = false;
      for (int w : ins.out) ok = ok && !writes(p.instrs[j], w);
    }
    if (!ok) continue;
    const int64_t part = p.bytes(ins.out[0]);
    for (size_t k = 0; k < ins.out.size(); ++k) {
      views.base[size_t(ins.out[k])] = x;
      views.offset[size_t(ins.out[k])] = int64_t(k) * part;
    }
    is_base[size_t(x)] = true;
    views.skip[i] = true;
  }

  return views;
}

}  // namespace shardlab::plan
