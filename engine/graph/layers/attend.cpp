// Attend: logits through an Embed node's table, transposed (flax.linen.Embed.attend): the output
// layer of a language model whose input and output embeddings are tied. It has no parameter of
// its own: the table is the Embed node's, named by the field "embed", and its gradient is the sum
// of what the lookup and these logits give it.
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class AttendLayer : public Layer {
 public:
  std::string summary() const override { return "vectors -> logits through an Embed node's table (tied weights, nn.Embed.attend)"; }
  std::string category() const override { return "Attention"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"embed", K::String, "embed", true, "the Embed node whose (vocab, embed) table this layer shares, transposed"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"embed"});
    embed_ = fields::string(node.params, "embed", "");
    if (embed_.empty()) throw Error("embed: name the Embed node whose table the logits go through");
  }
  std::vector<TiedParam> tied_params() const override { return {{"embed", "embedding", embed_ + "/embedding"}}; }
  // `params` holds the table, tied by the analysis before this is called.
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    if (params.empty() || params.front().shape.size() != 2) throw Error("embed: node '" + embed_ + "' has no (vocab, embed) table");
    const Shape& table = params.front().shape;
    if (x.shape.empty() || x.shape.back() != table[1])
      throw Error("input " + describe(x) + ": its last dimension must be the table's " + std::to_string(table[1]) + " features of '" +
                  embed_ + "'");
    ArrayInfo out = x;
    out.axes.resize(out.shape.size());
    out.shape.back() = table[0];
    out.axes.back() = params.front().axes.at(0);
    return out;
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Attrs a;
    a.trans_b = true;  // (.., embed) x (vocab, embed)^T
    return ctx.program.apply1(ir::Op::MatMul, {ctx.cast(in.at(0)), ctx.cast(ctx.param("embedding"))}, a, ctx.node);
  }

 private:
  std::string embed_;
};

}  // namespace

std::unique_ptr<Layer> make_attend() { return std::make_unique<AttendLayer>(); }

}  // namespace shardlab::graph
