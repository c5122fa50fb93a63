#include "engine/plan/memory_plan.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "engine/util/checked.h"

namespace shardlab::plan {

using ir::Op;
using ir::ValueKind;

namespace {

// Which operand an op may overwrite with its result (elementwise, same shape), or -1.
int inplace_operand(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Scale: case Op::Relu: case Op::Tanh:
    case Op::Gelu: case Op::Dropout: case Op::BiasAdd: case Op::MulRow: case Op::Reshape:
      return 0;
    case Op::ReluGrad: case Op::TanhGrad: case Op::GeluGrad:
      return 1;
    default:
      return -1;
  }
}

}  // namespace

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
        int64_t& total = kind == ValueKind::Param ? mp.param_elems : mp.opt_state_elems;
        mp.persistent_offset[v] = mp.param_elems + mp.opt_state_elems;
        total = util::add_or_throw(total, numel(p.values[v].shape), "memory plan: persistent elements");
      }

  std::vector<int> first(nv, end), last(nv, -1);
  for (size_t v = 0; v < nv; ++v)
    if (p.values[v].kind == ValueKind::Input || p.values[v].kind == ValueKind::Target) first[v] = -1;
  for (int i = 0; i < end; ++i) {
    for (int v : p.instrs[size_t(i)].in) last[size_t(v)] = std::max(last[size_t(v)], i);
    for (int v : p.instrs[size_t(i)].out) first[size_t(v)] = std::min(first[size_t(v)], i), last[size_t(v)] = std::max(last[size_t(v)], i);
  }
  for (int v : keep) last[size_t(v)] = end;

  // Alias in-place results to their operand's root buffer.
  std::vector<int> root(nv);
  std::iota(root.begin(), root.end(), 0);
  auto find = [&](int v) { while (root[size_t(v)] != v) v = root[size_t(v)]; return v; };
  for (int i = 0; i < end; ++i) {
    const ir::Instr& ins = p.instrs[size_t(i)];
    int k = inplace_operand(ins.op);
    if (k < 0 || ins.out.size() != 1) continue;
    int src = ins.in[size_t(k)], dst = ins.out[0];
    if (p.values[size_t(src)].kind != ValueKind::Temp || last[size_t(src)] != i) continue;
    if (numel(p.shape(src)) != numel(p.shape(dst))) continue;
    int r = find(src);
    root[size_t(dst)] = r;
    last[size_t(r)] = std::max(last[size_t(r)], last[size_t(dst)]);
  }

  struct Buf { int value; int64_t size; int first, last; int64_t offset = -1; };
  std::vector<Buf> bufs;
  for (size_t v = 0; v < nv; ++v) {
    ValueKind k = p.values[v].kind;
    if (k == ValueKind::Param || k == ValueKind::OptState || find(int(v)) != int(v)) continue;
    if (first[v] == end && last[v] < 0) continue;  // never produced nor read
    int64_t size = numel(p.values[v].shape);
    bufs.push_back({int(v), size, first[v], last[v]});
    // Sizes come from the project's shapes (each bounded by graph analysis); their sums are checked.
    if (k == ValueKind::Input || k == ValueKind::Target) mp.input_elems = util::add_or_throw(mp.input_elems, size, "memory plan: input elements");
    else mp.naive_temp_elems = util::add_or_throw(mp.naive_temp_elems, size, "memory plan: temporary elements");
  }
  // Greedy by size: place the largest buffers first at the lowest offset free over their live range.
  std::vector<size_t> order(bufs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bufs[a].size > bufs[b].size; });
  // The placed buffers live in time buckets (each in every bucket its live range touches), so a
  // buffer's overlapping neighbours are found among those of its own buckets rather than among
  // every buffer placed: a step of many microbatches has tens of thousands of buffers.
  constexpr int kBucket = 64;
  auto bucket = [](int t) { return size_t(t + 1) / kBucket; };  // t >= -1 (inputs are live from the start)
  std::vector<std::vector<size_t>> in_bucket(bucket(end) + 1);
  std::vector<size_t> seen(bufs.size(), SIZE_MAX);
  std::vector<std::pair<int64_t, int64_t>> busy;
  for (size_t bi : order) {
    Buf& b = bufs[bi];
    busy.clear();
    for (size_t k = bucket(b.first); k <= bucket(std::max(b.last, b.first)); ++k)
      for (size_t pj : in_bucket[k]) {
        const Buf& o = bufs[pj];
        if (seen[pj] == bi || !(o.first <= b.last && b.first <= o.last)) continue;
        seen[pj] = bi;
        busy.push_back({o.offset, o.offset + o.size});
      }
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto [s, e] : busy) {
      if (off + b.size <= s) break;
      off = std::max(off, e);
    }
    b.offset = off;
    mp.arena_elems = std::max(mp.arena_elems, util::add_or_throw(off, b.size, "memory plan: arena elements"));
    for (size_t k = bucket(b.first); k <= bucket(std::max(b.last, b.first)); ++k) in_bucket[k].push_back(bi);
  }
  for (const Buf& b : bufs) mp.arena_offset[size_t(b.value)] = b.offset;
  for (size_t v = 0; v < nv; ++v)
    if (find(int(v)) != int(v)) mp.arena_offset[v] = mp.arena_offset[size_t(find(int(v)))];
  return mp;
}

}  // namespace shardlab::plan
