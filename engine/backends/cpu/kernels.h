// CPU kernels, one per primitive, templated on the scalar so tests can run the same program in
// double precision (finite differences) that training runs in float. They see every operand as T:
// the executor stages 16-bit and int32 values through T (Executor::run), except a matmul's
// operands, which the GEMM reads as they are stored.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/step_context.h"
#include "engine/ir/program.h"

namespace shardlab::backends::cpu {

template <class T>
struct KernelArgs {
  std::vector<const T*> in;
  std::vector<T*> out;
  std::vector<const Shape*> in_shapes;
  std::vector<const Shape*> out_shapes;
  // In-place optimizer updates write their operands.
  std::vector<T*> in_mut;
};

template <class T>
void run_kernel(const ir::Instr& ins, const KernelArgs<T>& a, const StepContext& ctx);

// A MatMul or BatchMatMul on its operands as stored (float32 as T, or 16-bit), into c (T), with
// the elementwise instructions that consume it folded into its store (see Executor's fusion): bias
// add, then relu, or relu's gradient masked by the activation.
struct MatmulOperands {
  const void* a = nullptr;
  DType a_type = DType::F32;
  const Shape* a_shape = nullptr;
  const void* b = nullptr;
  DType b_type = DType::F32;
  const Shape* b_shape = nullptr;
};
template <class T>
void run_matmul(const ir::Instr& ins, const MatmulOperands& x, T* c, const Epilogue<T>& epilogue = {});

}  // namespace shardlab::backends::cpu
