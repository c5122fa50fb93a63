// Parameter-free activations: ReLU, GELU (tanh approximation, Flax's default), Tanh, and Softmax
// over the last axis.
#include "engine/graph/layers/layers.h"

namespace shardlab::graph {

namespace {

class ActivationLayer : public Layer {
 public:
  std::string summary() const override {
    return op_ == ir::Op::Relu      ? "max(x, 0)"
           : op_ == ir::Op::Gelu    ? "GELU, tanh approximation"
           : op_ == ir::Op::Softmax ? "softmax over the last axis"
                                    : "hyperbolic tangent";
  }
  std::string category() const override { return "Activation"; }
  explicit ActivationLayer(ir::Op op) : op_(op) {}
  void configure(const Node& node) override { fields::only(node.params, {}); }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override { return in.at(0); }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    return ctx.program.apply1(op_, {in.at(0)}, {}, ctx.node);
  }

 private:
  ir::Op op_;
};

}  // namespace

std::unique_ptr<Layer> make_relu() { return std::make_unique<ActivationLayer>(ir::Op::Relu); }
std::unique_ptr<Layer> make_gelu() { return std::make_unique<ActivationLayer>(ir::Op::Gelu); }
std::unique_ptr<Layer> make_tanh() { return std::make_unique<ActivationLayer>(ir::Op::Tanh); }
std::unique_ptr<Layer> make_softmax() { return std::make_unique<ActivationLayer>(ir::Op::Softmax); }

}  // namespace shardlab::graph
