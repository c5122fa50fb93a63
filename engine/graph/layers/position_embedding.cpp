// PositionEmbedding: a learned (seq, features) array added to every example, as ViT's and BERT's
// learned position embeddings are (Flax ViT: normal(0.02) initialisation).
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class PositionEmbeddingLayer : public Layer {
 public:
  std::string summary() const override { return "adds a learned (seq, features) position embedding"; }
  std::string category() const override { return "Attention"; }
  std::vector<FieldInfo> fields() const override {
    return {{"embedding_init", FieldInfo::Kind::Init, Json{{"type", "normal"}, {"stddev", 0.02}}, false, "initializer"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"embedding_init"});
    init_ = fields::init(node.params, "embedding_init", Json{{"type", "normal"}, {"stddev", 0.02}});
    overrides_ = node;
    overrides_.body = nullptr;
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    if (x.shape.size() != 3) throw Error("input " + describe(x) + " must be (batch, seq, features)");
    const std::vector<std::string> fallback{x.axes.size() == 3 ? x.axes[1] : "seq", x.axes.size() == 3 ? x.axes[2] : "embed"};
    params.push_back({"embedding", {x.shape[1], x.shape[2]}, fields::param_axes(overrides_, "embedding", fallback, 2), init_});
    return x;
  }
  // x + broadcast(embedding) over the batch; the gradient sums over the batch.
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Attrs a;
    a.dim = 0;
    a.shape = ctx.program.shape(in.at(0));
    const int pos = ctx.program.apply1(ir::Op::Broadcast, {ctx.cast(ctx.param("embedding"))}, a, ctx.node);
    return ctx.program.apply1(ir::Op::Add, {ctx.cast(in[0]), pos}, {}, ctx.node);
  }

 private:
  InitSpec init_;
  Node overrides_;
};

}  // namespace

std::unique_ptr<Layer> make_position_embedding() { return std::make_unique<PositionEmbeddingLayer>(); }

}  // namespace shardlab::graph
