// Kernels of the communication primitives for virtual CPU devices, and where a device's block of a
// sharded weight update lies.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/backends/cpu/kernels.h"
#include "engine/backends/shard_index.h"

namespace shardlab::backends::cpu {

// Up to this many blocks, an array whose blocks are not contiguous moves through one collective per
// block, straight between the devices' buffers; beyond it, through one collective on a staged copy.
// A 16 MiB Repeat gradient of 4 layers staged whole cost a device 5 ms of copying (and, in a fresh
// zeroed vector, faulting and clearing it) while it held its core and the others waited. The layout
// advisor prices these collectives by the same bound.
constexpr int64_t kBlockwiseMax = 8;

// The block index of `device` over `axes` (mixed radix, first axis major), as device_block does:
// which slice ShardSlice keeps. The CUDA backend's ShardSlice uses it too.
int64_t block_index(const sharding::Mesh& mesh, int device, const std::vector<std::string>& axes);

// This device's block of a parameter whose update is sharded along attrs.dim over attrs.mesh_axes
// (attrs.group_size blocks): `runs` runs of `len` elements, run r starting at r * stride + offset.
// An unsharded update (group_size 1) is one run over the whole parameter.
struct UpdateBlock {
  int64_t runs = 1, len = 0, stride = 0, offset = 0;
};
UpdateBlock update_block(const Shape& param, const ir::Attrs& attrs, const sharding::Mesh* mesh, int device);

// Where this device's block (of shape `local`) of a Dropout's operand sits in the whole array
// (attrs.shape split by attrs.layout); rank 0 where the operand is whole. The CUDA backend's
// dropout uses it too.
ShardIndex shard_index(const Shape& local, const ir::Attrs& attrs, const sharding::Mesh* mesh, int device);

// A communication primitive's operand and result as the executor holds them: raw elements of
// `type` (any dtype; a float32 value of the double-precision executor is float64), moved as they are.
struct CommArgs {
  const std::byte* in = nullptr;
  std::byte* out = nullptr;
  std::byte* in_mut = nullptr;  // AllGatherInPlace writes its operand
  // AllGatherInPlace: every device's operand is this one buffer (a shared replica), already whole
  // once every owner has written its block.
  bool shared = false;
  const Shape* in_shape = nullptr;
  const Shape* out_shape = nullptr;
  DType type = DType::F32;
};
void run_comm_kernel(const ir::Instr& ins, const CommArgs& a, const StepContext& ctx);

}  // namespace shardlab::backends::cpu
