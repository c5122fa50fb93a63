// Embed: token ids -> learned vectors, like flax.linen.Embed. The ids arrive as whole numbers in
// the activation's scalar type; an id outside [0, num_embeddings) stops the step with its position.
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class EmbedLayer : public Layer {
 public:
  std::string summary() const override { return "token ids -> rows of a learned (vocab, embed) table (nn.Embed)"; }
  std::string category() const override { return "Attention"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"num_embeddings", K::Int, 256, true, "vocabulary size: ids run from 0 to num_embeddings - 1"},
            {"features", K::Int, 64, true, "vector size"},
            {"embedding_init", K::Init, "embed_normal", false, "table initializer (embed_normal: stddev 1/sqrt(features), Flax's)"}};
  }
  void configure(const Node& node) override {
    const Json& p = node.params;
    fields::only(p, {"num_embeddings", "features", "embedding_init"});
    vocab_ = fields::positive_int(p, "num_embeddings");
    features_ = fields::positive_int(p, "features");
    init_ = fields::init(p, "embedding_init", "embed_normal");
    axes_ = fields::param_axes(node, "embedding", {"vocab", "embed"}, 2);
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& ids = in.at(0);
    params.push_back({"embedding", {vocab_, features_}, axes_, init_});
    ArrayInfo out = ids;
    out.axes.resize(out.shape.size());
    out.shape.push_back(features_);
    out.axes.push_back(axes_[1]);
    return out;
  }
  // The rows looked up, then cast: the same values as Flax's cast of the whole table before the
  // lookup, for a fraction of the work.
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    return ctx.cast(ctx.program.apply1(ir::Op::Gather, {ctx.param("embedding"), in.at(0)}, {}, ctx.node));
  }

 private:
  int64_t vocab_ = 0, features_ = 0;
  InitSpec init_;
  std::vector<std::string> axes_;
};

}  // namespace

std::unique_ptr<Layer> make_embed() { return std::make_unique<EmbedLayer>(); }

}  // namespace shardlab::graph
