#include "engine/ir/primitive.h"

#include <optional>

#include "engine/util/error.h"

namespace shardlab::ir {

namespace {
std::vector<Primitive> build_table() {
  std::vector<Primitive> all;
  register_matmul(all);
  register_elementwise(all);
  register_rowwise(all);
  register_structural(all);
  register_axis(all);
  register_indexing(all);
  register_windows(all);
  register_rotary(all);
  register_losses(all);
  register_optimizers(all);
  register_communication(all);
  std::vector<Primitive> table(static_cast<size_t>(Op::kCount));  // not size_t(...): clang 14 reads that as a declaration
  std::vector<bool> seen(size_t(Op::kCount), false);
  for (auto& p : all) {
    seen[size_t(p.op)] = true;
    table[size_t(p.op)] = std::move(p);
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) throw Error("internal: primitive " + std::to_string(i) + " has no definition");
  return table;
}
}  // namespace

std::vector<DType> same_float_dtype(const std::vector<DType>& in, const Attrs&) {
  std::optional<DType> first;
  for (DType d : in) {
    if (!is_float(d)) continue;
    if (!first) first = d;
    else if (d != *first)
      throw Error(std::string("operands are ") + dtype_name(*first) + " and " + dtype_name(d) + " (convert one of them first)");
  }
  return {first.value_or(in.empty() ? DType::F32 : in[0])};
}

const Primitive& primitive(Op op) {
  static const std::vector<Primitive> table = build_table();
  return table.at(size_t(op));
}

const char* op_name(Op op) { return primitive(op).name; }

bool is_collective(Op op) {
  return op == Op::AllReduce || op == Op::AllGather || op == Op::ReduceScatter || op == Op::AllToAll ||
         op == Op::AllGatherInPlace || op == Op::Send || op == Op::Recv;
}

}  // namespace shardlab::ir
