// Parameter-free activations: ReLU, GELU (tanh approximation, Flax's default), Tanh, Sigmoid,
// SiLU (x * sigmoid(x), Llama's gate) and Softmax over the last axis.
#include "engine/graph/layers/layers.h"

namespace shardlab::graph {

namespace {

class ActivationLayer : public Layer {
 public:
  std::string summary() const override {
    if (silu_) return "x * sigmoid(x), also called swish (Llama's gated MLP)";
    return op_ == ir::Op::Relu      ? "max(x, 0)"
           : op_ == ir::Op::Gelu    ? "GELU, tanh approximation"
           : op_ == ir::Op::Softmax ? "softmax over the last axis"
           : op_ == ir::Op::Sigmoid ? "1 / (1 + exp(-x))"
                                    : "hyperbolic tangent";
  }
  std::string category() const override { return "Activation"; }
  explicit ActivationLayer(ir::Op op, bool silu = false) : op_(op), silu_(silu) {}
  void configure(const Node& node) override { fields::only(node.params, {}); }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override { return in.at(0); }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    const int y = ctx.program.apply1(op_, {in.at(0)}, {}, ctx.node);
    return silu_ ? ctx.program.apply1(ir::Op::Mul, {in[0], y}, {}, ctx.node) : y;
  }

 private:
  ir::Op op_;
  bool silu_ = false;
};

}  // namespace

std::unique_ptr<Layer> make_relu() { return std::make_unique<ActivationLayer>(ir::Op::Relu); }
std::unique_ptr<Layer> make_gelu() { return std::make_unique<ActivationLayer>(ir::Op::Gelu); }
std::unique_ptr<Layer> make_tanh() { return std::make_unique<ActivationLayer>(ir::Op::Tanh); }
std::unique_ptr<Layer> make_sigmoid() { return std::make_unique<ActivationLayer>(ir::Op::Sigmoid); }
std::unique_ptr<Layer> make_silu() { return std::make_unique<ActivationLayer>(ir::Op::Sigmoid, true); }
std::unique_ptr<Layer> make_softmax() { return std::make_unique<ActivationLayer>(ir::Op::Softmax); }

}  // namespace shardlab::graph
