#include "engine/backends/cpu/shared_replicas.h"

#include <algorithm>

#include "engine/ir/primitive.h"

namespace shardlab::backends::cpu {

namespace {

bool is_update(ir::Op op) { return op == ir::Op::AdamUpdate || op == ir::Op::SgdUpdate; }

// Whether a collective over every device stands strictly between instructions `from` and `to`,
// going forward from `from` and round into the next step where `to` comes first.
bool barrier_between(const std::vector<size_t>& barriers, size_t from, size_t to) {
  const auto next = std::upper_bound(barriers.begin(), barriers.end(), from);
  if (from < to) return next != barriers.end() && *next < to;
  return next != barriers.end() || (!barriers.empty() && barriers.front() < to);
}

}  // namespace

std::vector<int> shared_replicas(const ir::Program& program, int64_t devices) {
  if (devices <= 1 || program.stages > 1) return {};
  const auto& instrs = program.instrs;
  std::vector<size_t> barriers;  // in program order
  // Per value, in program order: where it is read, updated and gathered; whether it disqualified.
  struct Uses {
    std::vector<size_t> reads, updates, gathers;
    bool bad = false;
  };
  std::vector<Uses> uses(program.values.size());
  for (size_t i = 0; i < instrs.size(); ++i) {
    const ir::Instr& ins = instrs[i];
    if (ir::is_collective(ins.op) && ins.attrs.group_size == devices) barriers.push_back(i);
    for (int v : ins.out) uses[size_t(v)].bad = true;
    for (size_t k = 0; k < ins.in.size(); ++k) {
      Uses& u = uses[size_t(ins.in[k])];
      const bool writes = is_update(ins.op) || ins.op == ir::Op::AllGatherInPlace;
      if (!writes) {
        u.reads.push_back(i);
        continue;
      }
      // Updated or gathered in place: only as the first operand (an update's state is per device),
      // by all the devices, each its own block.
      if (k != 0 || ins.attrs.group_size != devices) u.bad = true;
      (ins.op == ir::Op::AllGatherInPlace ? u.gathers : u.updates).push_back(i);
    }
  }

  std::vector<int> shared;
  for (size_t v = 0; v < program.values.size(); ++v) {
    const ir::Value& val = program.values[v];
    const Uses& u = uses[v];
    if (val.kind != ir::ValueKind::Param || val.dtype != DType::F32 || u.bad || u.updates.empty()) continue;
    bool ok = true;
    for (size_t at : u.updates) {
      // The next instruction touching it must be its gather.
      const auto r = std::upper_bound(u.reads.begin(), u.reads.end(), at);
      const auto w = std::upper_bound(u.updates.begin(), u.updates.end(), at);
      const auto g = std::upper_bound(u.gathers.begin(), u.gathers.end(), at);
      const size_t next_touch = std::min(r != u.reads.end() ? *r : instrs.size(), w != u.updates.end() ? *w : instrs.size());
      ok = ok && g != u.gathers.end() && *g < next_touch;
      for (size_t read : u.reads) ok = ok && barrier_between(barriers, read, at);
    }
    if (ok) shared.push_back(int(v));
  }
  return shared;
}

}  // namespace shardlab::backends::cpu
