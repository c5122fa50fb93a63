// One entry per primitive: its shape rule, VJP and cost sit together (engine/ir/primitives/*.cpp).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/partition_rule.h"
#include "engine/ir/program.h"

namespace shardlab::ir {

using Cotangents = std::vector<std::optional<int>>;

struct Primitive {
  Op op;
  const char* name;
  int num_inputs;   // -1: variadic (Stack)
  // Output shapes from input shapes; throws Error describing the mismatch.
  std::function<std::vector<Shape>(const std::vector<Shape>&, const Attrs&)> shapes;
  // Output dtypes from input dtypes (one entry serves every output); throws Error describing the
  // mismatch. Empty: same_float_dtype.
  std::function<std::vector<DType>(const std::vector<DType>&, const Attrs&)> dtypes;
  // Cotangents of the inputs from those of the outputs (nullopt = zero). `needs[i]` says whether
  // input i's cotangent is wanted. Empty for primitives that only appear in backward programs.
  // `Instr` must not refer into p.instrs: the VJP appends to it.
  std::function<Cotangents(Program&, const Instr&, const Cotangents&, const std::vector<bool>& needs)> vjp;
  // How it runs on a mesh (see partition_rule.h); empty only for the collectives themselves.
  PartitionRule partition;
  // Floating-point operations of one evaluation.
  std::function<double(const std::vector<Shape>& in, const std::vector<Shape>& out, const Attrs&)> flops;
};

// The usual dtype rule: the float operands must share one dtype (mixing needs a Convert), which the
// outputs take; int32 operands (labels, indices) are left out of it.
std::vector<DType> same_float_dtype(const std::vector<DType>& in, const Attrs& attrs);

const Primitive& primitive(Op op);
const char* op_name(Op op);
// The primitives that move data between devices (they wait on their peers).
bool is_collective(Op op);

// Registration, one function per primitive family file.
void register_matmul(std::vector<Primitive>&);
void register_elementwise(std::vector<Primitive>&);
void register_rowwise(std::vector<Primitive>&);
void register_structural(std::vector<Primitive>&);
void register_axis(std::vector<Primitive>&);
void register_indexing(std::vector<Primitive>&);
void register_windows(std::vector<Primitive>&);
void register_rotary(std::vector<Primitive>&);
void register_losses(std::vector<Primitive>&);
void register_optimizers(std::vector<Primitive>&);
void register_communication(std::vector<Primitive>&);

}  // namespace shardlab::ir
