// Kernels of AllReduce, AllGather, ReduceScatter and ShardSlice for virtual CPU devices.
#pragma once

#include <string>
#include <vector>

#include "engine/backends/cpu/kernels.h"

namespace shardlab::backends::cpu {

// The block index of `device` over `axes` (mixed radix, first axis major), as device_block does:
// which slice ShardSlice keeps. The CUDA backend's ShardSlice uses it too.
int64_t block_index(const sharding::Mesh& mesh, int device, const std::vector<std::string>& axes);

template <class T>
void run_comm_kernel(const ir::Instr& ins, const KernelArgs<T>& a, const StepContext& ctx);

}  // namespace shardlab::backends::cpu
