// Add and Multiply: two inputs of one shape combined elementwise: the residual connection, and the
// gate of a gated MLP (Llama's silu(gate) * up).
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class BinaryLayer : public Layer {
 public:
  explicit BinaryLayer(ir::Op op) : op_(op) {}
  std::string summary() const override {
    return op_ == ir::Op::Add ? "a + b, the residual connection" : "a * b elementwise, a gate (silu(gate) * up)";
  }
  std::string category() const override { return "Structure"; }
  std::vector<std::string> input_ports() const override { return {"a", "b"}; }
  void configure(const Node& node) override { fields::only(node.params, {}); }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override {
    if (in.at(0).shape != in.at(1).shape)
      throw Error("inputs a " + describe(in[0]) + " and b " + describe(in[1]) + " have different shapes");
    return in[0];
  }
  // Inputs of different dtypes meet in the wider one, as JAX promotes (bfloat16 + float32 is float32;
  // bfloat16 + float16, which neither holds, is float32 too).
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    const DType a = ctx.program.dtype(in.at(0)), b = ctx.program.dtype(in.at(1));
    const DType to = a == b ? a : DType::F32;
    return ctx.program.apply1(op_, {ir::convert_to(ctx.program, in[0], to, ctx.node), ir::convert_to(ctx.program, in[1], to, ctx.node)},
                              {}, ctx.node);
  }

 private:
  ir::Op op_;
};

}  // namespace

std::unique_ptr<Layer> make_add() { return std::make_unique<BinaryLayer>(ir::Op::Add); }
std::unique_ptr<Layer> make_multiply() { return std::make_unique<BinaryLayer>(ir::Op::Mul); }

}  // namespace shardlab::graph
