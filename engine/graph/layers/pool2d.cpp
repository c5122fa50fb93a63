// MaxPool2D and AvgPool2D: the largest or the mean value of each window of an image in NHWC, per
// channel, like flax.linen.max_pool and avg_pool (whose mean counts padding, count_include_pad).
// Both lower to Patches and a reduction over the window's taps.
#include "engine/graph/layers/layers.h"
#include "engine/graph/layers/shape_ops.h"
#include "engine/graph/layers/window_fields.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class Pool2DLayer : public Layer {
 public:
  explicit Pool2DLayer(bool max) : max_(max) {}
  std::string summary() const override {
    return max_ ? "largest value of each window, per channel (flax.linen.max_pool)"
                : "mean of each window, per channel (flax.linen.avg_pool)";
  }
  std::string category() const override { return "Convolution"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"window", K::IntList, Json::array({2, 2}), true, "window height, width"},
            {"strides", K::IntList, Json::array(), false, "step between windows: height, width (empty: the window)"},
            {"padding", K::String, "VALID", false, "VALID (no padding) or SAME (output = input / stride)"}};
  }
  void configure(const Node& node) override {
    const Json& p = node.params;
    fields::only(p, {"window", "strides", "padding"});
    window_ = fields::pool_window(p);
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override {
    const ArrayInfo& x = in.at(0);
    fields::check_image(x);
    const std::array<int64_t, 2> out = window_.output(x.shape[1], x.shape[2]);
    ArrayInfo y = x;
    y.shape[1] = out[0];
    y.shape[2] = out[1];
    return y;
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Program& p = ctx.program;
    const Shape xs = p.shape(in.at(0));
    const Shape image{xs.at(0), xs.at(1), xs.at(2), xs.size() == 4 ? xs[3] : 1};
    const int x = ops::reshape(p, in[0], image, ctx.node);
    const int windows = p.apply1(ir::Op::Patches, {x}, window_.patches(image[1], image[2], max_), ctx.node);
    const Shape ws = p.shape(windows);  // (b, oh, ow, kh, kw, c)
    const int taps = ops::reshape(p, windows, {ws[0], ws[1], ws[2], ws[3] * ws[4], ws[5]}, ctx.node);
    ir::Attrs over_taps;
    over_taps.dim = 3;
    int y;
    if (max_) {
      y = p.apply1(ir::Op::ReduceMax, {taps}, over_taps, ctx.node);
    } else {
      ir::Attrs mean;
      mean.alpha = 1.0 / double(ws[3] * ws[4]);
      y = p.apply1(ir::Op::Scale, {p.apply1(ir::Op::ReduceAxis, {taps}, over_taps, ctx.node)}, mean, ctx.node);
    }
    Shape out = p.shape(y);
    if (xs.size() == 3) out.pop_back();
    return ops::reshape(p, y, out, ctx.node);
  }

 private:
  bool max_;
  fields::Window2D window_;
};

}  // namespace

std::unique_ptr<Layer> make_max_pool2d() { return std::make_unique<Pool2DLayer>(true); }
std::unique_ptr<Layer> make_avg_pool2d() { return std::make_unique<Pool2DLayer>(false); }

}  // namespace shardlab::graph
