// LayerNorm over the last axis with learned scale and bias, like flax.linen.LayerNorm.
#include "engine/graph/layers/layers.h"

namespace shardlab::graph {

namespace {

class LayerNormLayer : public Layer {
 public:
  std::string summary() const override { return "normalise over the last axis, then scale and shift"; }
  std::string category() const override { return "Normalization"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    FieldInfo eps{"epsilon", K::Number, 1e-6, false, "added to the variance"};
    eps.lo = 0.0, eps.hi = 1.0;
    return {eps, {"use_scale", K::Bool, true, false, "learn a scale"}, {"use_bias", K::Bool, true, false, "learn a bias"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"epsilon", "use_scale", "use_bias"});
    eps_ = fields::number(node.params, "epsilon", 1e-6, 0.0, 1.0);
    use_scale_ = fields::boolean(node.params, "use_scale", true);
    use_bias_ = fields::boolean(node.params, "use_bias", true);
    overrides_ = node;  // infer() needs the param_axes overrides; keep a copy, not a pointer
    overrides_.body = nullptr;
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    std::vector<std::string> feature{x.axes.empty() ? "embed" : x.axes.back()};
    if (use_scale_) params.push_back({"scale", {x.shape.back()}, fields::param_axes(overrides_, "scale", feature, 1), {"ones"}});
    if (use_bias_) params.push_back({"bias", {x.shape.back()}, fields::param_axes(overrides_, "bias", feature, 1), {"zeros"}});
    return x;
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Attrs a;
    a.eps = eps_;
    int y = ctx.program.apply1(ir::Op::LayerNorm, {ctx.cast(in.at(0))}, a, ctx.node);
    if (use_scale_) y = ctx.program.apply1(ir::Op::MulRow, {y, ctx.cast(ctx.param("scale"))}, {}, ctx.node);
    if (use_bias_) y = ctx.program.apply1(ir::Op::BiasAdd, {y, ctx.cast(ctx.param("bias"))}, {}, ctx.node);
    return y;
  }
  // Statistics and output in float32 under any policy, unless the node says otherwise.
  std::optional<DType> compute_dtype() const override { return DType::F32; }

 private:
  double eps_ = 1e-6;
  bool use_scale_ = true, use_bias_ = true;
  Node overrides_;
};

}  // namespace

std::unique_ptr<Layer> make_layer_norm() { return std::make_unique<LayerNormLayer>(); }

}  // namespace shardlab::graph
