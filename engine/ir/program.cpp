#include "engine/ir/program.h"

#include <algorithm>
#include <sstream>

#include "engine/ir/primitive.h"
#include "engine/util/error.h"

namespace shardlab::ir {

int Program::add_value(std::string name, Shape shape, ValueKind kind, std::vector<std::string> axes, DType dtype) {
  values.push_back(Value{std::move(name), std::move(shape), kind, dtype, std::move(axes)});
  return int(values.size()) - 1;
}

std::vector<int> Program::apply(Op op, std::vector<int> in, Attrs attrs, const std::string& node,
                               const std::string& out_name) {
  const Primitive& prim = primitive(op);
  if (prim.num_inputs >= 0 && int(in.size()) != prim.num_inputs)
    throw Error(std::string("internal: ") + prim.name + " takes " + std::to_string(prim.num_inputs) +
                " inputs, got " + std::to_string(in.size()));
  std::vector<Shape> in_shapes;
  for (int v : in) in_shapes.push_back(shape(v));
  std::vector<DType> in_dtypes;
  for (int v : in) in_dtypes.push_back(dtype(v));
  std::vector<Shape> out_shapes;
  std::vector<DType> out_dtypes;
  try {
    out_shapes = prim.shapes(in_shapes, attrs);
    out_dtypes = prim.dtypes ? prim.dtypes(in_dtypes, attrs) : same_float_dtype(in_dtypes, attrs);
  } catch (const Error& e) {
    throw Error((node.empty() ? std::string() : "node '" + node + "': ") + prim.name + ": " + e.what());
  }
  Instr ins{op, std::move(in), {}, std::move(attrs), node};
  for (size_t i = 0; i < out_shapes.size(); ++i) {
    std::string name = out_name.empty() ? (node.empty() ? std::string(prim.name) : node + "/" + prim.name)
                                        : out_name;
    if (out_shapes.size() > 1) name += "." + std::to_string(i);
    ins.out.push_back(add_value(name, out_shapes[i], ValueKind::Temp, {}, out_dtypes.at(std::min(i, out_dtypes.size() - 1))));
  }
  instrs.push_back(std::move(ins));
  return instrs.back().out;
}

int convert_to(Program& p, int v, DType dtype, const std::string& node) {
  if (p.dtype(v) == dtype) return v;
  Attrs a;
  a.dtype = dtype;
  return p.apply1(Op::Convert, {v}, a, node);
}

std::string to_string(const Program& p) {
  std::ostringstream os;
  for (const Instr& ins : p.instrs) {
    for (size_t i = 0; i < ins.out.size(); ++i) {
      os << (i ? ", " : "") << '%' << ins.out[i] << shape_str(p.shape(ins.out[i]));
      if (p.dtype(ins.out[i]) != DType::F32) os << ' ' << dtype_short(p.dtype(ins.out[i]));
    }
    os << (ins.out.empty() ? "" : " = ") << op_name(ins.op) << '(';
    for (size_t i = 0; i < ins.in.size(); ++i) os << (i ? ", " : "") << '%' << ins.in[i];
    os << ")";
    if (!ins.node.empty()) os << "  # " << ins.node;
    if (p.stages > 1) os << (ins.node.empty() ? "  #" : "") << " @stage " << ins.stage;
    os << '\n';
  }
  return os.str();
}

}  // namespace shardlab::ir
