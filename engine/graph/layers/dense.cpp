// Dense: y = x @ kernel (+ bias), over the last axis, like flax.linen.Dense.
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class DenseLayer : public Layer {
 public:
  std::string summary() const override { return "y = x @ kernel + bias over the last axis (flax.linen.Dense)"; }
  std::string category() const override { return "Core"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"features", K::Int, 128, true, "output features"},
            {"use_bias", K::Bool, true, false, "add a bias vector"},
            {"kernel_init", K::Init, "lecun_normal", false, "kernel initializer"},
            {"bias_init", K::Init, "zeros", false, "bias initializer"}};
  }
  void configure(const Node& node) override {
    const Json& p = node.params;
    fields::only(p, {"features", "use_bias", "kernel_init", "bias_init"});
    features_ = fields::positive_int(p, "features");
    use_bias_ = fields::boolean(p, "use_bias", true);
    kernel_init_ = fields::init(p, "kernel_init", "lecun_normal");
    bias_init_ = fields::init(p, "bias_init", "zeros");
    kernel_axes_ = fields::param_axes(node, "kernel", {"embed", "mlp"}, 2);
    bias_axes_ = fields::param_axes(node, "bias", {kernel_axes_[1]}, 1);
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    if (x.shape.size() < 2)
      throw Error("input " + shape_str(x.shape) + " needs a batch and a feature dimension (add a Flatten?)");
    params.push_back({"kernel", {x.shape.back(), features_}, kernel_axes_, kernel_init_});
    if (use_bias_) params.push_back({"bias", {features_}, bias_axes_, bias_init_});
    ArrayInfo out = x;
    out.axes.resize(out.shape.size());
    out.shape.back() = features_;
    out.axes.back() = kernel_axes_[1];
    return out;
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    // (batch, ..., in) @ (in, features)
    const int x = ctx.cast(in.at(0)), kernel = ctx.cast(ctx.param("kernel"));
    // A bias that needs a Convert (mixed precision) is converted before the product, so that nothing
    // stands between the product and its bias add and a GEMM can fold the add (ir/fusion.h).
    int bias = -1;
    if (use_bias_) {
      const int stored = ctx.param("bias");
      if (ctx.program.dtype(stored) != ctx.compute) bias = ctx.cast(stored);
      else bias = stored;
    }
    int y = ctx.program.apply1(ir::Op::MatMul, {x, kernel}, {}, ctx.node);
    if (use_bias_) y = ctx.program.apply1(ir::Op::BiasAdd, {y, bias}, {}, ctx.node);
    return y;
  }

 private:
  int64_t features_ = 0;
  bool use_bias_ = true;
  InitSpec kernel_init_, bias_init_;
  std::vector<std::string> kernel_axes_, bias_axes_;
};

}  // namespace

std::unique_ptr<Layer> make_dense() { return std::make_unique<DenseLayer>(); }

}  // namespace shardlab::graph
