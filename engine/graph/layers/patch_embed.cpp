// PatchEmbed: an image cut into patch x patch tiles, each flattened and projected to `features`,
// as ViT's stride-patch convolution does (its kernel keeps nn.Conv's (patch, patch, channels,
// features) shape). (batch, height, width[, channels]) -> (batch, patches, features), row-major
// over the patch grid.
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class PatchEmbedLayer : public Layer {
 public:
  std::string summary() const override { return "image -> patch x patch tiles -> Dense: (batch, patches, features) (ViT)"; }
  std::string category() const override { return "Attention"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"patch", K::Int, 4, true, "tile side in pixels; must divide the height and the width"},
            {"features", K::Int, 64, true, "vector size per patch"},
            {"use_bias", K::Bool, true, false, "add a bias vector"},
            {"kernel_init", K::Init, "lecun_normal", false, "kernel initializer"},
            {"bias_init", K::Init, "zeros", false, "bias initializer"}};
  }
  void configure(const Node& node) override {
    const Json& p = node.params;
    fields::only(p, {"patch", "features", "use_bias", "kernel_init", "bias_init"});
    patch_ = fields::positive_int(p, "patch");
    features_ = fields::positive_int(p, "features");
    use_bias_ = fields::boolean(p, "use_bias", true);
    kernel_init_ = fields::init(p, "kernel_init", "lecun_normal");
    bias_init_ = fields::init(p, "bias_init", "zeros");
    overrides_ = node;
    overrides_.body = nullptr;
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    if (x.shape.size() != 3 && x.shape.size() != 4)
      throw Error("input " + describe(x) + " must be an image: (batch, height, width) or (batch, height, width, channels)");
    for (size_t d : {size_t(1), size_t(2)})
      if (x.shape[d] % patch_)
        throw Error("patch: " + std::to_string(patch_) + " does not divide the image's " + (d == 1 ? "height " : "width ") +
                    std::to_string(x.shape[d]));
    const int64_t channels = x.shape.size() == 4 ? x.shape[3] : 1;
    params.push_back({"kernel", {patch_, patch_, channels, features_},
                      fields::param_axes(overrides_, "kernel", {"patch_height", "patch_width", "in_channels", "embed"}, 4), kernel_init_});
    const std::vector<std::string> kaxes = params.back().axes;
    if (use_bias_) params.push_back({"bias", {features_}, fields::param_axes(overrides_, "bias", {kaxes[3]}, 1), bias_init_});
    return ArrayInfo{{x.shape[0], (x.shape[1] / patch_) * (x.shape[2] / patch_), features_},
                     {x.axes.empty() ? "batch" : x.axes[0], "seq", kaxes[3]}};
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Program& p = ctx.program;
    const Shape xs = p.shape(in.at(0));
    const int64_t b = xs[0], gh = xs[1] / patch_, gw = xs[2] / patch_, c = xs.size() == 4 ? xs[3] : 1, k = patch_ * patch_ * c;
    ir::Attrs tiles;
    tiles.shape = {b, gh, patch_, gw, patch_, c};
    ir::Attrs grid;
    grid.perm = {0, 1, 3, 2, 4, 5};  // (batch, gh, gw, patch, patch, channels)
    ir::Attrs rows;
    rows.shape = {b, gh * gw, k};
    ir::Attrs flat;
    flat.shape = {k, features_};
    int x = p.apply1(ir::Op::Reshape, {ctx.cast(in[0])}, tiles, ctx.node);
    x = p.apply1(ir::Op::Reshape, {p.apply1(ir::Op::Transpose, {x}, grid, ctx.node)}, rows, ctx.node);
    int y = p.apply1(ir::Op::MatMul, {x, p.apply1(ir::Op::Reshape, {ctx.cast(ctx.param("kernel"))}, flat, ctx.node)}, {}, ctx.node);
    if (use_bias_) y = p.apply1(ir::Op::BiasAdd, {y, ctx.cast(ctx.param("bias"))}, {}, ctx.node);
    return y;
  }

 private:
  int64_t patch_ = 4, features_ = 64;
  bool use_bias_ = true;
  InitSpec kernel_init_, bias_init_;
  Node overrides_;
};

}  // namespace

std::unique_ptr<Layer> make_patch_embed() { return std::make_unique<PatchEmbedLayer>(); }

}  // namespace shardlab::graph
