// Dropout: active in training only; the mask is keyed by the project seed, the node and the step.
#include "engine/graph/layers/layers.h"
#include "engine/util/hash.h"

namespace shardlab::graph {

namespace {

class DropoutLayer : public Layer {
 public:
  std::string summary() const override { return "zero a random fraction of activations while training"; }
  std::string category() const override { return "Regularization"; }
  std::vector<FieldInfo> fields() const override {
    FieldInfo rate{"rate", FieldInfo::Kind::Number, 0.5, false, "fraction dropped"};
    rate.lo = 0.0, rate.hi = 0.999;
    return {rate};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"rate"});
    rate_ = fields::number(node.params, "rate", 0.5, 0.0, 0.999);
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override { return in.at(0); }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    if (!ctx.training || rate_ == 0.0) return in.at(0);
    ir::Attrs a;
    a.alpha = rate_;
    a.seed = util::mix64(ctx.seed ^ util::hash_name(ctx.node));
    return ctx.program.apply1(ir::Op::Dropout, {in.at(0)}, a, ctx.node);
  }

 private:
  double rate_ = 0.5;
};

}  // namespace

std::unique_ptr<Layer> make_dropout() { return std::make_unique<DropoutLayer>(); }

}  // namespace shardlab::graph
