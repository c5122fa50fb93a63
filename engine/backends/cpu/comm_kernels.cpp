// Kernels of the communication primitives on virtual devices: the collective itself runs in
// ThreadCollectives; these lay blocks of a non-leading dimension out for it and back.
#include "engine/backends/cpu/comm_kernels.h"

#include <cstring>
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
// differ only in `dim`.
template <class T>
void copy_slab(const T* src, const Shape& ss, T* dst, const Shape& ds, int64_t dim, int64_t src_off, int64_t dst_off, int64_t len) {
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < dim; ++i) outer *= ss[size_t(i)];
  for (size_t i = size_t(dim) + 1; i < ss.size(); ++i) inner *= ss[i];
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + (o * ds[size_t(dim)] + dst_off) * inner, src + (o * ss[size_t(dim)] + src_off) * inner,
                size_t(len * inner) * sizeof(T));
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
template <class T>
void gather_in_place(const ir::Instr& ins, const KernelArgs<T>& a, const StepContext& ctx, const std::vector<int>& group) {
  const UpdateBlock b = update_block(*a.in_shapes[0], ins.attrs, ctx.mesh, ctx.device);
  T* x = a.in_mut[0];
  const int64_t n = ins.attrs.group_size, count = b.runs * b.len;
  if (b.runs == 1) {
    ctx.comm->all_gather(ctx.device, group, x + b.offset, x, count);
    return;
  }
  std::vector<T> mine(static_cast<size_t>(count)), staged(static_cast<size_t>(n * count));
  for (int64_t r = 0; r < b.runs; ++r) std::memcpy(mine.data() + r * b.len, x + r * b.stride + b.offset, size_t(b.len) * sizeof(T));
  ctx.comm->all_gather(ctx.device, group, mine.data(), staged.data(), count);
  for (int64_t k = 0; k < n; ++k)
    for (int64_t r = 0; r < b.runs; ++r)
      std::memcpy(x + r * b.stride + k * b.len, staged.data() + k * count + r * b.len, size_t(b.len) * sizeof(T));
}

template <class T>
void run_comm_kernel(const ir::Instr& ins, const KernelArgs<T>& a, const StepContext& ctx) {
  if (!ctx.mesh) throw Error(std::string("internal: ") + ir::op_name(ins.op) + " outside an SPMD run");
  const ir::Attrs& at = ins.attrs;
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
    if (ins.op == ir::Op::Send) ctx.comm->post(ctx.device, peer, at.tag, a.in[0], numel(*a.in_shapes[0]));
    else ctx.comm->take(ctx.device, peer, at.tag, a.out[0], numel(*a.out_shapes[0]));
    return;
  }
  const Shape& is = *a.in_shapes[0];
  const Shape& os = *a.out_shapes[0];
  const T* x = a.in[0];
  T* y = a.out[0];
  const int64_t n = at.group_size;
  if (ins.op == ir::Op::ShardSlice) {
    int64_t outer, in_inner, out_inner;
    split(is, at.dim, outer, in_inner);
    split(os, at.dim, outer, out_inner);
    const int64_t b = block_index(*ctx.mesh, ctx.device, at.mesh_axes);
    for (int64_t o = 0; o < outer; ++o) std::memcpy(y + o * out_inner, x + o * in_inner + b * out_inner, size_t(out_inner) * sizeof(T));
    return;
  }
  if (!ctx.comm) throw Error("internal: no collectives for an SPMD run");
  const std::vector<int> group = ctx.mesh->group(ctx.device, at.mesh_axes);
  if (int64_t(group.size()) != n) throw Error("internal: collective group size does not match the program");
  switch (ins.op) {
    case ir::Op::AllReduce:
      ctx.comm->all_reduce(ctx.device, group, x, y, numel(is));
      return;
    case ir::Op::AllGather: {
      int64_t outer, inner;
      split(is, at.dim, outer, inner);
      if (outer == 1) {
        ctx.comm->all_gather(ctx.device, group, x, y, numel(is));
        return;
      }
      // Gather whole blocks, then interleave them along `dim`.
      std::vector<T> staged(size_t(n * numel(is)));
      ctx.comm->all_gather(ctx.device, group, x, staged.data(), numel(is));
      for (int64_t r = 0; r < n; ++r)
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(y + (o * n + r) * inner, staged.data() + r * numel(is) + o * inner, size_t(inner) * sizeof(T));
      return;
    }
    case ir::Op::ReduceScatter: {
      int64_t outer, inner;
      split(os, at.dim, outer, inner);
      if (outer == 1) {
        ctx.comm->reduce_scatter(ctx.device, group, x, y, numel(os));
        return;
      }
      // Make each destination's block contiguous first.
      std::vector<T> staged(size_t(numel(is)));
      for (int64_t r = 0; r < n; ++r)
        for (int64_t o = 0; o < outer; ++o)
          std::memcpy(staged.data() + r * numel(os) + o * inner, x + (o * n + r) * inner, size_t(inner) * sizeof(T));
      ctx.comm->reduce_scatter(ctx.device, group, staged.data(), y, numel(os));
      return;
    }
    case ir::Op::AllToAll: {
      // Chunk r (block r of split_dim) goes to rank r; rank r's chunk lands at block r of dim.
      Shape chunk = is;
      chunk[size_t(at.split_dim)] /= n;
      const int64_t cn = numel(chunk);
      std::vector<T> send(size_t(n * cn)), recv(size_t(n * cn));
      for (int64_t r = 0; r < n; ++r)
        copy_slab(x, is, send.data() + r * cn, chunk, at.split_dim, r * chunk[size_t(at.split_dim)], 0, chunk[size_t(at.split_dim)]);
      ctx.comm->all_to_all(ctx.device, group, send.data(), recv.data(), cn);
      for (int64_t r = 0; r < n; ++r)
        copy_slab(recv.data() + r * cn, chunk, y, os, at.dim, 0, r * chunk[size_t(at.dim)], chunk[size_t(at.dim)]);
      return;
    }
    default:
      throw Error(std::string("internal: ") + ir::op_name(ins.op) + " is not a collective");
  }
}

template void run_comm_kernel<float>(const ir::Instr&, const KernelArgs<float>&, const StepContext&);
template void run_comm_kernel<double>(const ir::Instr&, const KernelArgs<double>&, const StepContext&);

}  // namespace shardlab::backends::cpu
