// Conv2D: a 2-D convolution over an image in NHWC, like flax.linen.Conv: kernel (window_h,
// window_w, channels / groups, features), strides, dilation, SAME or VALID padding and feature
// groups. It lowers to Patches (every window copied out) and one GEMM with the flattened kernel,
// so it runs at the GEMM's speed; feature groups become one batched GEMM over the groups.
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/graph/layers/shape_ops.h"
#include "engine/graph/layers/window_fields.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class Conv2DLayer : public Layer {
 public:
  std::string summary() const override { return "2-D convolution over (batch, height, width, channels) (flax.linen.Conv)"; }
  std::string category() const override { return "Convolution"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"features", K::Int, 32, true, "output channels"},
            {"kernel_size", K::IntList, Json::array({3, 3}), true, "window height, width"},
            {"strides", K::IntList, Json::array({1, 1}), false, "step between windows: height, width"},
            {"padding", K::String, "SAME", false, "SAME (output = input / stride) or VALID (no padding)"},
            {"dilation", K::IntList, Json::array({1, 1}), false, "spacing of the kernel's taps: height, width"},
            {"feature_groups", K::Int, 1, false, "split channels and features into this many independent groups"},
            {"use_bias", K::Bool, true, false, "add a bias vector"},
            {"kernel_init", K::Init, "lecun_normal", false, "kernel initializer"},
            {"bias_init", K::Init, "zeros", false, "bias initializer"}};
  }
  void configure(const Node& node) override {
    const Json& p = node.params;
    fields::only(p, {"features", "kernel_size", "strides", "padding", "dilation", "feature_groups", "use_bias", "kernel_init",
                     "bias_init"});
    features_ = fields::positive_int(p, "features");
    window_ = fields::conv_window(p);
    groups_ = fields::positive_int(p, "feature_groups", 1);
    if (features_ % groups_)
      throw Error("feature_groups: " + std::to_string(groups_) + " does not divide features " + std::to_string(features_));
    use_bias_ = fields::boolean(p, "use_bias", true);
    kernel_init_ = fields::init(p, "kernel_init", "lecun_normal");
    bias_init_ = fields::init(p, "bias_init", "zeros");
    kernel_axes_ = fields::param_axes(node, "kernel", {"window_height", "window_width", "in_channels", "channels"}, 4);
    bias_axes_ = fields::param_axes(node, "bias", {kernel_axes_[3]}, 1);
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    fields::check_image(x);
    const int64_t channels = x.shape.size() == 4 ? x.shape[3] : 1;
    if (channels % groups_)
      throw Error("feature_groups: " + std::to_string(groups_) + " does not divide the input's " + std::to_string(channels) +
                  " channels");
    const std::array<int64_t, 2> out = window_.output(x.shape[1], x.shape[2]);
    params.push_back({"kernel", {window_.size[0], window_.size[1], channels / groups_, features_}, kernel_axes_, kernel_init_});
    if (use_bias_) params.push_back({"bias", {features_}, bias_axes_, bias_init_});
    auto axis = [&](size_t d, const char* fallback) { return d < x.axes.size() ? x.axes[d] : std::string(fallback); };
    return ArrayInfo{{x.shape[0], out[0], out[1], features_}, {axis(0, "batch"), axis(1, "height"), axis(2, "width"), kernel_axes_[3]}};
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Program& p = ctx.program;
    const Shape& given = p.shape(in.at(0));
    const Shape xs{given.at(0), given.at(1), given.at(2), given.size() == 4 ? given[3] : 1};
    const int x = ops::reshape(p, ctx.cast(in[0]), xs, ctx.node);
    const int64_t b = xs[0], c = xs[3], kh = window_.size[0], kw = window_.size[1], g = groups_, cg = c / g, fg = features_ / g;
    const int windows = p.apply1(ir::Op::Patches, {x}, window_.patches(xs[1], xs[2], false), ctx.node);
    const Shape ws = p.shape(windows);  // (b, oh, ow, kh, kw, c)
    const int64_t oh = ws[1], ow = ws[2], taps = kh * kw * cg;
    const int kernel = ctx.cast(ctx.param("kernel"));
    int y;
    if (g == 1) {
      const int rows = ops::reshape(p, windows, {b, oh, ow, taps}, ctx.node);
      y = p.apply1(ir::Op::MatMul, {rows, ops::reshape(p, kernel, {taps, features_}, ctx.node)}, {}, ctx.node);
    } else {
      // Group j's windows (its cg channels) against its kernel slice (its fg features), one product per group.
      const int64_t n = b * oh * ow;
      const int split = ops::reshape(p, windows, {n, kh * kw, g, cg}, ctx.node);
      const int lhs = ops::reshape(p, ops::transpose(p, split, {2, 0, 1, 3}, ctx.node), {g, n, taps}, ctx.node);
      const int k3 = ops::reshape(p, kernel, {taps, g, fg}, ctx.node);
      const int rhs = ops::transpose(p, k3, {1, 0, 2}, ctx.node);
      const int prod = p.apply1(ir::Op::BatchMatMul, {lhs, rhs}, {}, ctx.node);  // (g, n, fg)
      y = ops::reshape(p, ops::transpose(p, prod, {1, 0, 2}, ctx.node), {b, oh, ow, features_}, ctx.node);
    }
    if (use_bias_) y = p.apply1(ir::Op::BiasAdd, {y, ctx.cast(ctx.param("bias"))}, {}, ctx.node);
    return y;
  }

 private:
  int64_t features_ = 32, groups_ = 1;
  fields::Window2D window_;
  bool use_bias_ = true;
  InitSpec kernel_init_, bias_init_;
  std::vector<std::string> kernel_axes_, bias_axes_;
};

}  // namespace

std::unique_ptr<Layer> make_conv2d() { return std::make_unique<Conv2DLayer>(); }

}  // namespace shardlab::graph
