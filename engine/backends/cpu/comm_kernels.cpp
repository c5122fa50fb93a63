// Kernels of the communication primitives on virtual devices: the collective itself runs in
// ThreadCollectives; these lay blocks of a non-leading dimension out for it and back.
#include "engine/backends/cpu/comm_kernels.h"

#include <cstring>
#include <memory>
#include <vector>

#include "engine/backends/cpu/collectives.h"
#include "engine/ir/primitive.h"
#include "engine/sharding/mesh.h"
#include "engine/util/error.h"

namespace shardlab::backends::cpu {

namespace {

// Elements before `dim` (outer) and from `dim` on (inner) of a row-major shape.
void split(const Shape& s, int64_t dim, int64_t& outer, int64_t& inner) {
  outer = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[size_t(i)];
  inner = 1;
  for (size_t i = size_t(dim); i < s.size(); ++i) inner *= s[i];
}

// Copies `len` slices along `dim` from src (at src_off) to dst (at dst_off); the two shapes may
// differ only in `dim`. Elements are `es` bytes.
void copy_slab(const std::byte* src, const Shape& ss, std::byte* dst, const Shape& ds, int64_t dim, int64_t src_off, int64_t dst_off,
               int64_t len, size_t es) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= ss[size_t(i)];
  for (size_t i = size_t(dim) + 1; i < ss.size(); ++i) inner *= ss[i];
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + size_t((o * ds[size_t(dim)] + dst_off) * inner) * es, src + size_t((o * ss[size_t(dim)] + src_off) * inner) * es,
                size_t(len * inner) * es);
}

// Staging space that lives with the device's thread, reused by every call and never cleared: a
// fresh buffer per call costs a page fault per 4 KiB, every call.
std::byte* scratch(int slot, size_t bytes) {
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    size_t size = 0;
  };
  thread_local Buffer buffers[2];
  Buffer& b = buffers[slot];
  if (b.size < bytes) {
    b.data.reset();
    b.data = std::make_unique_for_overwrite<std::byte[]>(bytes);
    b.size = bytes;
  }
  return b.data.get();
}

}  // namespace

int64_t block_index(const sharding::Mesh& mesh, int device, const std::vector<std::string>& axes) {
  const std::vector<int64_t> c = mesh.coords(device);
  int64_t idx = 0;
  for (const std::string& a : axes) {
    const int k = mesh.axis_index(a);
    idx = idx * mesh.axes()[size_t(k)].size + c[size_t(k)];
  }
  return idx;
}

ShardIndex shard_index(const Shape& local, const ir::Attrs& attrs, const sharding::Mesh* mesh, int device) {
  ShardIndex s;
  if (attrs.layout.empty() || local == attrs.shape) return s;
  if (!mesh) throw Error("internal: a sharded dropout outside an SPMD run");
  if (local.size() != attrs.shape.size() || local.size() > size_t(ShardIndex::kMaxRank))
    throw Error("internal: dropout block " + shape_str(local) + " of " + shape_str(attrs.shape));
  s.rank = int(local.size());
  int64_t stride = 1;
  for (int d = s.rank - 1; d >= 0; --d) {
    s.local[d] = local[size_t(d)];
    s.offset[d] = block_index(*mesh, device, attrs.layout[size_t(d)]) * local[size_t(d)];
    s.stride[d] = stride;
    stride *= attrs.shape[size_t(d)];
  }
  return s;
}

UpdateBlock update_block(const Shape& param, const ir::Attrs& attrs, const sharding::Mesh* mesh, int device) {
  UpdateBlock b;
  if (attrs.group_size <= 1) {
    b.len = numel(param);
    return b;
  }
  if (!mesh) throw Error("internal: a sharded update outside an SPMD run");
  int64_t inner;
  split(param, attrs.dim, b.runs, inner);
  b.stride = inner;
  b.len = inner / attrs.group_size;
  b.offset = block_index(*mesh, device, attrs.mesh_axes) * b.len;
  return b;
}

// Each device's own block along `dim` is already in place; the others arrive from their owners.
void gather_in_place(const ir::Instr& ins, const CommArgs& a, const StepContext& ctx, const std::vector<int>& group) {
  if (a.shared) {
    ctx.comm->barrier(ctx.device, group);  // the owners' updates are done and seen by all
    return;
  }
  const UpdateBlock b = update_block(*a.in_shape, ins.attrs, ctx.mesh, ctx.device);
  const size_t es = dtype_size(a.type);
  std::byte* x = a.in_mut;
  const int64_t n = ins.attrs.group_size, count = b.runs * b.len;
  if (b.runs == 1) {
    ctx.comm->all_gather(ctx.device, group, x + size_t(b.offset) * es, x, count, a.type);
    return;
  }
  if (b.runs <= kBlockwiseMax) {
    // Each run is a whole row of blocks: gather it in place.
    for (int64_t r = 0; r < b.runs; ++r) {
      std::byte* row = x + size_t(r * b.stride) * es;
      ctx.comm->all_gather(ctx.device, group, row + size_t(b.offset) * es, row, b.len, a.type);
    }
    return;
  }
  std::byte* mine = scratch(0, size_t(count) * es);
  std::byte* staged = scratch(1, size_t(n * count) * es);
  for (int64_t r = 0; r < b.runs; ++r)
    std::memcpy(mine + size_t(r * b.len) * es, x + size_t(r * b.stride + b.offset) * es, size_t(b.len) * es);
  ctx.comm->all_gather(ctx.device, group, mine, staged, count, a.type);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t r = 0; r < b.runs; ++r)
      std::memcpy(x + size_t(r * b.stride + k * b.len) * es, staged + size_t(k * count + r * b.len) * es, size_t(b.len) * es);
}

void run_comm_kernel(const ir::Instr& ins, const CommArgs& a, const StepContext& ctx) {
  if (!ctx.mesh) throw Error(std::string("internal: ") + ir::op_name(ins.op) + " outside an SPMD run");
  const ir::Attrs& at = ins.attrs;
  const DType t = a.type;
  const size_t es = dtype_size(t);
  if (ins.op == ir::Op::AllGatherInPlace) {
    if (!ctx.comm) throw Error("internal: no collectives for an SPMD run");
    const std::vector<int> group = ctx.mesh->group(ctx.device, at.mesh_axes);
    if (int64_t(group.size()) != at.group_size) throw Error("internal: collective group size does not match the program");
    return gather_in_place(ins, a, ctx, group);
  }
  if (ins.op == ir::Op::Send || ins.op == ir::Op::Recv) {
    // To or from the device of stage `peer` with this device's other coordinates.
    if (!ctx.comm) throw Error("internal: no collectives for an SPMD run");
    std::vector<int64_t> c = ctx.mesh->coords(ctx.device);
    if (ctx.stage_axis < 0) throw Error("internal: a pipeline transfer outside a pipelined run");
    c.at(size_t(ctx.stage_axis)) = at.peer;
    const int peer = int(ctx.mesh->device_at(c));
    if (ins.op == ir::Op::Send) ctx.comm->post(ctx.device, peer, at.tag, a.in, numel(*a.in_shape), t);
    else ctx.comm->take(ctx.device, peer, at.tag, a.out, numel(*a.out_shape), t);
    return;
  }
  const Shape& is = *a.in_shape;
  const Shape& os = *a.out_shape;
  const std::byte* x = a.in;
  std::byte* y = a.out;
  const int64_t n = at.group_size;
  if (ins.op == ir::Op::ShardSlice) {
    int64_t outer, in_inner, out_inner;
    split(is, at.dim, outer, in_inner);
    split(os, at.dim, outer, out_inner);
    const int64_t b = block_index(*ctx.mesh, ctx.device, at.mesh_axes);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y + size_t(o * out_inner) * es, x + size_t(o * in_inner + b * out_inner) * es, size_t(out_inner) * es);
    return;
  }
  if (!ctx.comm) throw Error("internal: no collectives for an SPMD run");
  const std::vector<int> group = ctx.mesh->group(ctx.device, at.mesh_axes);
  if (int64_t(group.size()) != n) throw Error("internal: collective group size does not match the program");
  switch (ins.op) {
    case ir::Op::AllReduce:
      ctx.comm->all_reduce(ctx.device, group, x, y, numel(is), t);
      return;
    case ir::Op::AllGather: {
      int64_t outer, inner;
      split(is, at.dim, outer, inner);
      if (outer == 1) {
        ctx.comm->all_gather(ctx.device, group, x, y, numel(is), t);
        return;
      }
      if (outer <= kBlockwiseMax) {
        // Outer index o's slice of every rank lands side by side at o's place in y.
        for (int64_t o = 0; o < outer; ++o)
          ctx.comm->all_gather(ctx.device, group, x + size_t(o * inner) * es, y + size_t(o * n * inner) * es, inner, t);
        return;
      }
      // Gather whole blocks, then interleave them along `dim`.
      std::byte* staged = scratch(0, size_t(n * numel(is)) * es);
      ctx.comm->all_gather(ctx.device, group, x, staged, numel(is), t);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(y + size_t((o * n + r) * inner) * es, staged + size_t(r * numel(is) + o * inner) * es, size_t(inner) * es);
      return;
    }
    case ir::Op::ReduceScatter: {
      int64_t outer, inner;
      split(os, at.dim, outer, inner);
      if (outer == 1) {
        ctx.comm->reduce_scatter(ctx.device, group, x, y, numel(os), t);
        return;
      }
      if (outer <= kBlockwiseMax) {
        // Outer index o's slice holds every rank's block side by side, as a reduce-scatter takes it.
        for (int64_t o = 0; o < outer; ++o)
          ctx.comm->reduce_scatter(ctx.device, group, x + size_t(o * n * inner) * es, y + size_t(o * inner) * es, inner, t);
        return;
      }
      // Make each destination's block contiguous first.
      std::byte* staged = scratch(0, size_t(numel(is)) * es);
      for (int64_t r = 0; r < n; ++r)
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(staged + size_t(r * numel(os) + o * inner) * es, x + size_t((o * n + r) * inner) * es, size_t(inner) * es);
      ctx.comm->reduce_scatter(ctx.device, group, staged, y, numel(os), t);
      return;
    }
    case ir::Op::AllToAll: {
      // Chunk r (block r of split_dim) goes to rank r; rank r's chunk lands at block r of dim.
      Shape chunk = is;
      chunk[size_t(at.split_dim)] /= n;
      const int64_t cn = numel(chunk);
      std::byte* send = scratch(0, size_t(n * cn) * es);
      std::byte* recv = scratch(1, size_t(n * cn) * es);
      for (int64_t r = 0; r < n; ++r)
        copy_slab(x, is, send + size_t(r * cn) * es, chunk, at.split_dim, r * chunk[size_t(at.split_dim)], 0,
                  chunk[size_t(at.split_dim)], es);
      ctx.comm->all_to_all(ctx.device, group, send, recv, cn, t);
      for (int64_t r = 0; r < n; ++r)
        copy_slab(recv + size_t(r * cn) * es, chunk, y, os, at.dim, 0, r * chunk[size_t(at.dim)], chunk[size_t(at.dim)], es);
      return;
    }
    default:
      throw Error(std::string("internal: ") + ir::op_name(ins.op) + " is not a collective");
  }
}

}  // namespace shardlab::backends::cpu
