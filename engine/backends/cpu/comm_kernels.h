// Kernels of AllReduce, AllGather, ReduceScatter and ShardSlice for virtual CPU devices.
#pragma once

#include "engine/backends/cpu/kernels.h"

namespace shardlab::backends::cpu {

template <class T>
void run_comm_kernel(const ir::Instr& ins, const KernelArgs<T>& a, const StepContext& ctx);

}  // namespace shardlab::backends::cpu
