#include "engine/plan/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>

#include "engine/ir/primitive.h"
#include "engine/plan/first_fit.h"
#include "engine/util/checked.h"

namespace shardlab::plan {

using ir::Op;
using ir::ValueKind;

namespace {

// Which operand an op may overwrite with its result (elementwise, same shape), or -1.
int inplace_operand(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Scale: case Op::Relu: case Op::Tanh:
    case Op::Gelu: case Op::Dropout: case Op::BiasAdd: case Op::MulRow: case Op::Reshape: case Op::Softmax:
    case Op::Sigmoid:
      return 0;
    case Op::ReluGrad: case Op::TanhGrad: case Op::GeluGrad: case Op::SoftmaxGrad: case Op::SigmoidGrad:
      return 1;
    default:
      return -1;
  }
}

}  // namespace

int64_t planned_bytes(const ir::Program& p, int v) { return (p.bytes(v) + 3) / 4 * 4; }

Staging staging_of(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Scale: case Op::Relu: case Op::ReluGrad: case Op::Gelu:
    case Op::GeluGrad: case Op::Tanh: case Op::TanhGrad: case Op::Sigmoid: case Op::SigmoidGrad:
      return Staging::Pointwise;
    case Op::BiasAdd: case Op::MulRow:
      return Staging::Rows;
    default:
      return Staging::Whole;
  }
}

bool stages_operand(const ir::Program& p, const ir::Instr& ins, size_t k) {
  const bool result = k >= ins.in.size();
  const int v = result ? ins.out[k - ins.in.size()] : ins.in[k];
  if (p.dtype(v) == DType::F32) return false;
  if (ir::is_collective(ins.op) || ins.op == Op::ShardSlice || ins.op == Op::Convert || ins.op == Op::Reshape) return false;
  if ((ins.op == Op::MatMul || ins.op == Op::BatchMatMul) && !result) return false;
  return true;
}

int64_t staging_chunk(const ir::Program& p, const ir::Instr& ins) {
  const int64_t n = ins.out.empty() ? 0 : numel(p.shape(ins.out[0]));
  switch (staging_of(ins.op)) {
    case Staging::Pointwise: return std::min(n, kStagingChunk);
    case Staging::Rows: {
      const int64_t cols = std::max<int64_t>(1, p.shape(ins.in[1]).empty() ? 1 : numel(p.shape(ins.in[1])));
      return std::min(n, std::max<int64_t>(1, kStagingChunk / cols) * cols);
    }
    case Staging::Whole: break;
  }
  return n;
}

int64_t staging_elems(const ir::Program& p, const ir::Instr& ins) {
  int64_t n = 0;
  const Staging how = staging_of(ins.op);
  for (size_t k = 0; k < ins.in.size() + ins.out.size(); ++k) {
    if (!stages_operand(p, ins, k)) continue;
    const int64_t whole = numel(p.shape(k < ins.in.size() ? ins.in[k] : ins.out[k - ins.in.size()]));
    // A Rows instruction's row (operand 1) is staged whole, once.
    n += how == Staging::Whole || (how == Staging::Rows && k == 1) ? whole : staging_chunk(p, ins);
  }
  return n;
}

MemoryPlan plan_memory(const ir::Program& p, const std::vector<int>& keep) {
  const size_t nv = p.values.size();
  const int end = int(p.instrs.size());
  MemoryPlan mp;
  mp.arena_offset.assign(nv, -1);
  mp.persistent_offset.assign(nv, -1);

  // Persistent block: parameters first, then optimizer state.
  for (ValueKind kind : {ValueKind::Param, ValueKind::OptState})
    for (size_t v = 0; v < nv; ++v)
      if (p.values[v].kind == kind) {
        int64_t& total = kind == ValueKind::Param ? mp.param_bytes : mp.opt_state_bytes;
        mp.persistent_offset[v] = mp.param_bytes + mp.opt_state_bytes;
        total = util::add_or_throw(total, planned_bytes(p, int(v)), "memory plan: persistent bytes");
      }

  // Live ranges per stage (one stage, 0, without a pipeline): a value is live on a stage from the
  // first to the last of that stage's instructions touching it.
  const int64_t S = std::max<int64_t>(p.stages, 1);
  auto at = [&](int64_t s, size_t v) { return size_t(s) * nv + v; };
  std::vector<int> first(size_t(S) * nv, end), last(size_t(S) * nv, -1);
  auto touch = [&](const ir::Instr& ins, int i, auto&& f) {
    for (int64_t s = 0; s < S; ++s)
      if (ir::runs_on_stage(ins, S > 1 ? s : -1)) f(s, i);
  };
  std::vector<int> writers(nv, 0);
  for (int i = 0; i < end; ++i) {
    const ir::Instr& ins = p.instrs[size_t(i)];
    for (int v : ins.out) ++writers[size_t(v)];
    touch(ins, i, [&](int64_t s, int t) {
      for (int v : ins.in) last[at(s, size_t(v))] = std::max(last[at(s, size_t(v))], t);
      for (int v : ins.out) first[at(s, size_t(v))] = std::min(first[at(s, size_t(v))], t), last[at(s, size_t(v))] = std::max(last[at(s, size_t(v))], t);
    });
  }
  // The host writes every input and target into every device before the step, whichever stage
  // reads it, so they never share space with one another on any stage.
  for (int64_t s = 0; s < S; ++s)
    for (size_t v = 0; v < nv; ++v)
      if (p.values[v].kind == ValueKind::Input || p.values[v].kind == ValueKind::Target) {
        first[at(s, v)] = -1;
        last[at(s, v)] = std::max(last[at(s, v)], -1);
      }
  for (int v : keep)
    for (int64_t s = 0; s < S; ++s)
      if (S == 1 || last[at(s, size_t(v))] >= 0) last[at(s, size_t(v))] = end;

  // Alias in-place results to their operand's root buffer (in a pipeline, only where one stage's
  // instruction is the operand's last use and the result's only writer).
  std::vector<int> root(nv);
  std::iota(root.begin(), root.end(), 0);
  auto find = [&](int v) { while (root[size_t(v)] != v) v = root[size_t(v)]; return v; };
  for (int i = 0; i < end; ++i) {
    const ir::Instr& ins = p.instrs[size_t(i)];
    int k = inplace_operand(ins.op);
    if (k < 0 || ins.out.size() != 1) continue;
    int src = ins.in[size_t(k)], dst = ins.out[0];
    if (p.values[size_t(src)].kind != ValueKind::Temp) continue;
    if (planned_bytes(p, src) != planned_bytes(p, dst)) continue;
    int64_t s0 = 0;
    if (S > 1) {
      if (ins.stage < 0 || writers[size_t(dst)] != 1) continue;
      bool elsewhere = false;
      for (int64_t s = 0; s < S; ++s)
        if (s != ins.stage && last[at(s, size_t(src))] >= 0) elsewhere = true;
      if (elsewhere) continue;
      s0 = ins.stage;
    }
    if (last[at(s0, size_t(src))] != i) continue;
    int r = find(src);
    root[size_t(dst)] = r;
    last[at(s0, size_t(r))] = std::max(last[at(s0, size_t(r))], last[at(s0, size_t(dst))]);
    first[at(s0, size_t(r))] = std::min(first[at(s0, size_t(r))], first[at(s0, size_t(dst))]);
  }

  // A Stack's parts made in place (a Repeat's per-layer gradients): where each part is read by the
  // Stack alone, it is placed inside the Stack's result, which then lives from the first part's
  // making, and the Stack copies nothing (each operand is already where it would copy it). The
  // parts no longer sit beside the result at the Stack, so the peak only falls. Within one stage.
  std::vector<int> inside(nv, -1);  // the Stack result a part is placed in
  std::vector<int64_t> inside_at(nv, 0);
  if (S == 1) {
    std::vector<int> sharing(nv, 0);  // values per root buffer
    for (size_t v = 0; v < nv; ++v) ++sharing[size_t(find(int(v)))];
    std::vector<char> is_part(nv, 0);
    for (int i = 0; i < end; ++i) {
      const ir::Instr& ins = p.instrs[size_t(i)];
      if (ins.op != ir::Op::Stack || ins.out.size() != 1 || ins.in.empty()) continue;
      const int g = ins.out[0];
      const int64_t part = p.bytes(ins.in[0]);
      // Parts a whole number of 4-byte words, so each keeps the plan's alignment.
      if (p.values[size_t(g)].kind != ValueKind::Temp || find(g) != g || part % 4 != 0) continue;
      bool ok = true;
      for (int w : ins.in) {
        const size_t u = size_t(w);
        ok = ok && p.values[u].kind == ValueKind::Temp && !is_part[u] && find(w) == w && sharing[u] == 1 &&
             writers[u] == 1 && last[u] == i && first[u] < i && p.bytes(w) == part && w != g;
        if (ok) is_part[u] = 1;  // also catches a part given twice
      }
      if (!ok) {
        for (int w : ins.in)
          if (inside[size_t(w)] < 0) is_part[size_t(w)] = 0;
        continue;
      }
      for (size_t k = 0; k < ins.in.size(); ++k) {
        inside[size_t(ins.in[k])] = g;
        inside_at[size_t(ins.in[k])] = int64_t(k) * part;
        first[size_t(g)] = std::min(first[size_t(g)], first[size_t(ins.in[k])]);
      }
    }
  }

  std::vector<Buffer> bufs;
  std::vector<int> value_of;  // per buffer
  for (size_t v = 0; v < nv; ++v) {
    ValueKind k = p.values[v].kind;
    if (k == ValueKind::Param || k == ValueKind::OptState || find(int(v)) != int(v) || inside[v] >= 0) continue;
    Buffer b{planned_bytes(p, int(v)), {}};
    for (int64_t s = 0; s < S; ++s)
      if (!(first[at(s, v)] == end && last[at(s, v)] < 0)) b.live.push_back({s, first[at(s, v)], last[at(s, v)]});
    if (b.live.empty()) continue;  // never produced nor read
    // Sizes come from the project's shapes (each bounded by graph analysis); their sums are checked.
    if (k == ValueKind::Input || k == ValueKind::Target) mp.input_bytes = util::add_or_throw(mp.input_bytes, b.size, "memory plan: input bytes");
    else mp.naive_temp_bytes = util::add_or_throw(mp.naive_temp_bytes, b.size, "memory plan: temporary bytes");
    bufs.push_back(std::move(b));
    value_of.push_back(int(v));
  }
  // Greedy by size: the largest buffers first, each at the lowest offset free over its live range.
  std::vector<size_t> order(bufs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bufs[a].size > bufs[b].size; });
  const std::vector<int64_t> offset = place_first_fit(bufs, order, end);
  if (S > 1) mp.stage_arena_bytes.assign(size_t(S), 0);
  for (size_t bi = 0; bi < bufs.size(); ++bi) {
    mp.arena_offset[size_t(value_of[bi])] = offset[bi];
    mp.arena_bytes = std::max(mp.arena_bytes, offset[bi] + bufs[bi].size);
    if (S > 1)
      for (const LiveSpan& sp : bufs[bi].live)
        mp.stage_arena_bytes[size_t(sp.stage)] = std::max(mp.stage_arena_bytes[size_t(sp.stage)], offset[bi] + bufs[bi].size);
  }
  for (const ir::Instr& ins : p.instrs) mp.staging_bytes = std::max(mp.staging_bytes, staging_elems(p, ins) * int64_t(sizeof(float)));
  // A part inside a Stack's result (which may itself be a part of a later Stack's), then the
  // in-place results at their root's offset.
  std::function<int64_t(size_t)> part_offset = [&](size_t v) -> int64_t {
    return inside[v] < 0 ? mp.arena_offset[v] : part_offset(size_t(inside[v])) + inside_at[v];
  };
  for (size_t v = 0; v < nv; ++v)
    if (inside[v] >= 0) mp.arena_offset[v] = part_offset(v);
  for (size_t v = 0; v < nv; ++v)
    if (find(int(v)) != int(v)) mp.arena_offset[v] = mp.arena_offset[size_t(find(int(v)))];
  return mp;
}

}  // namespace shardlab::plan
