// RMSNorm over the last axis with a learned scale, like Llama's (and flax.linen.RMSNorm): x divided
// by the root of its mean square (no mean taken out, no bias), computed in float32.
#include "engine/graph/layers/layers.h"

namespace shardlab::graph {

namespace {

class RmsNormLayer : public Layer {
 public:
  std::string summary() const override { return "x / sqrt(mean(x^2) + eps) over the last axis, then scale (Llama)"; }
  std::string category() const override { return "Normalization"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    FieldInfo eps{"epsilon", K::Number, 1e-6, false, "added to the mean square"};
    eps.lo = 0.0, eps.hi = 1.0;
    return {eps, {"use_scale", K::Bool, true, false, "learn a scale"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"epsilon", "use_scale"});
    eps_ = fields::number(node.params, "epsilon", 1e-6, 0.0, 1.0);
    use_scale_ = fields::boolean(node.params, "use_scale", true);
    overrides_ = node;  // infer() reads the param_axes overrides
    overrides_.body = nullptr;
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    std::vector<std::string> feature{x.axes.empty() ? "embed" : x.axes.back()};
    if (use_scale_) params.push_back({"scale", {x.shape.back()}, fields::param_axes(overrides_, "scale", feature, 1), {"ones"}});
    return x;
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Attrs a;
    a.eps = eps_;
    int y = ctx.program.apply1(ir::Op::RmsNorm, {ctx.cast(in.at(0))}, a, ctx.node);
    if (use_scale_) y = ctx.program.apply1(ir::Op::MulRow, {y, ctx.cast(ctx.param("scale"))}, {}, ctx.node);
    return y;
  }
  std::optional<DType> compute_dtype() const override { return DType::F32; }

 private:
  double eps_ = 1e-6;
  bool use_scale_ = true;
  Node overrides_;
};

}  // namespace

std::unique_ptr<Layer> make_rms_norm() { return std::make_unique<RmsNormLayer>(); }

}  // namespace shardlab::graph
