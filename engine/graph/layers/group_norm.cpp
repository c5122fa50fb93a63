// GroupNorm, like flax.linen.GroupNorm: the channels (the last axis) split into num_groups groups,
// each example's group normalised over every other axis (the spatial ones and its channels), then a
// learned scale and bias per channel. Lowered onto LayerNorm: the input is laid out as (batch,
// groups, everything of a group) and normalised over its last axis, so it needs no primitive of its
// own and runs, shards and differentiates as LayerNorm does.
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class GroupNormLayer : public Layer {
 public:
  std::string summary() const override {
    return "normalise each group of channels over every axis but the batch, then scale and shift";
  }
  std::string category() const override { return "Normalization"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    FieldInfo eps{"epsilon", K::Number, 1e-6, false, "added to the variance"};
    eps.lo = 0.0, eps.hi = 1.0;
    return {{"num_groups", K::Int, 32, false, "groups the channels (the last axis) are split into"},
            eps,
            {"use_scale", K::Bool, true, false, "learn a scale per channel"},
            {"use_bias", K::Bool, true, false, "learn a bias per channel"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"num_groups", "epsilon", "use_scale", "use_bias"});
    groups_ = fields::positive_int(node.params, "num_groups", 32);
    eps_ = fields::number(node.params, "epsilon", 1e-6, 0.0, 1.0);
    use_scale_ = fields::boolean(node.params, "use_scale", true);
    use_bias_ = fields::boolean(node.params, "use_bias", true);
    overrides_ = node;
    overrides_.body = nullptr;
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    if (x.shape.size() < 2) throw Error("input " + describe(x) + " must be (batch, ..., channels)");
    const int64_t channels = x.shape.back();
    if (channels % groups_)
      throw Error("num_groups: " + std::to_string(groups_) + " groups do not divide the input's " + std::to_string(channels) +
                  " channels; use a divisor of " + std::to_string(channels));
    std::vector<std::string> feature{x.axes.empty() ? "channels" : x.axes.back()};
    if (use_scale_) params.push_back({"scale", {channels}, fields::param_axes(overrides_, "scale", feature, 1), {"ones"}});
    if (use_bias_) params.push_back({"bias", {channels}, fields::param_axes(overrides_, "bias", feature, 1), {"zeros"}});
    return x;
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Program& p = ctx.program;
    const Shape xs = p.shape(in.at(0));
    const int64_t b = xs[0], c = xs.back(), per = c / groups_;
    int64_t spatial = 1;
    for (size_t d = 1; d + 1 < xs.size(); ++d) spatial *= xs[d];
    ir::Attrs split, regroup, rows, norm, back, whole;
    split.shape = {b, spatial, groups_, per};
    regroup.perm = {0, 2, 1, 3};  // (batch, groups, spatial, channels of the group), and back
    rows.shape = {b, groups_, spatial * per};
    norm.eps = eps_;
    back.shape = {b, groups_, spatial, per};
    whole.shape = xs;
    int y = p.apply1(ir::Op::Reshape, {ctx.cast(in[0])}, split, ctx.node);
    y = p.apply1(ir::Op::Reshape, {p.apply1(ir::Op::Transpose, {y}, regroup, ctx.node)}, rows, ctx.node);
    y = p.apply1(ir::Op::LayerNorm, {y}, norm, ctx.node);
    y = p.apply1(ir::Op::Transpose, {p.apply1(ir::Op::Reshape, {y}, back, ctx.node)}, regroup, ctx.node);
    y = p.apply1(ir::Op::Reshape, {y}, whole, ctx.node);
    if (use_scale_) y = p.apply1(ir::Op::MulRow, {y, ctx.cast(ctx.param("scale"))}, {}, ctx.node);
    if (use_bias_) y = p.apply1(ir::Op::BiasAdd, {y, ctx.cast(ctx.param("bias"))}, {}, ctx.node);
    return y;
  }
  // Statistics and output in float32 under any policy, as LayerNorm's.
  std::optional<DType> compute_dtype() const override { return DType::F32; }

 private:
  int64_t groups_ = 32;
  double eps_ = 1e-6;
  bool use_scale_ = true, use_bias_ = true;
  Node overrides_;
};

}  // namespace

std::unique_ptr<Layer> make_group_norm() { return std::make_unique<GroupNormLayer>(); }

}  // namespace shardlab::graph
