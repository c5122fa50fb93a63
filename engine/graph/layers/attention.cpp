// MultiHeadAttention: self-attention like flax.linen.MultiHeadDotProductAttention. Query, key and
// value projections (embed -> heads x kv), softmax(q k^T / sqrt(kv)) per head (optionally causal,
// optionally with dropout on the weights), the weighted values, and an output projection back to
// the input's features. Parameters keep Flax's names and shapes: query/kernel (embed, heads, kv),
// out/kernel (heads, kv, embed), so a `heads` rule splits them Megatron-style. Llama's variants:
// fewer key/value heads than query heads (grouped-query attention: key/kernel (embed, kv_heads,
// kv), kv head j serving query heads j*g .. j*g + g - 1 as transformers' repeat_kv does) and
// rotary position embedding of the queries and keys.
#include <cmath>

#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/graph/layers/shape_ops.h"
#include "engine/util/error.h"
#include "engine/util/hash.h"

namespace shardlab::graph {

namespace {

using ops::reshape;
using ops::transpose;

class AttentionLayer : public Layer {
 public:
  std::string summary() const override { return "multi-head self-attention over (batch, seq, features) (nn.MultiHeadDotProductAttention)"; }
  std::string category() const override { return "Attention"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    FieldInfo rate{"dropout_rate", K::Number, 0.0, false, "dropout on the attention weights while training"};
    rate.lo = 0.0, rate.hi = 0.99;
    return {{"num_heads", K::Int, 4, true, "attention heads"},
            {"qkv_features", K::Int, 0, false, "heads x kv features of query, key and value (0: the input's features)"},
            {"out_features", K::Int, 0, false, "output features (0: the input's features)"},
            {"causal", K::Bool, false, false, "each position attends to itself and earlier ones only"},
            rate,
            {"use_bias", K::Bool, true, false, "biases on the four projections"},
            {"num_kv_heads", K::Int, 0, false, "key/value heads, dividing num_heads (grouped-query attention; 0: num_heads)"},
            {"rope", K::Bool, false, false, "rotary position embedding of the queries and keys (Llama)"},
            {"rope_theta", K::Number, 10000.0, false, "the rotary embedding's base"},
            {"kernel_init", K::Init, "lecun_normal", false, "projection kernels' initializer"},
            {"bias_init", K::Init, "zeros", false, "projection biases' initializer"}};
  }
  void configure(const Node& node) override {
    const Json& p = node.params;
    fields::only(p, {"num_heads", "qkv_features", "out_features", "causal", "dropout_rate", "use_bias", "kernel_init", "bias_init",
                     "num_kv_heads", "rope", "rope_theta"});
    heads_ = fields::positive_int(p, "num_heads");
    kv_heads_ = p.contains("num_kv_heads") && p["num_kv_heads"] != 0 ? fields::positive_int(p, "num_kv_heads") : heads_;
    if (heads_ % kv_heads_)
      throw Error("num_kv_heads: " + std::to_string(kv_heads_) + " does not divide num_heads " + std::to_string(heads_));
    rope_ = fields::boolean(p, "rope", false);
    rope_theta_ = fields::number(p, "rope_theta", 10000.0, 1.0, 1e12);
    qkv_ = p.contains("qkv_features") && p["qkv_features"] != 0 ? fields::positive_int(p, "qkv_features") : 0;
    out_ = p.contains("out_features") && p["out_features"] != 0 ? fields::positive_int(p, "out_features") : 0;
    causal_ = fields::boolean(p, "causal", false);
    rate_ = fields::number(p, "dropout_rate", 0.0, 0.0, 0.99);
    use_bias_ = fields::boolean(p, "use_bias", true);
    kernel_init_ = fields::init(p, "kernel_init", "lecun_normal");
    bias_init_ = fields::init(p, "bias_init", "zeros");
    overrides_ = node;  // infer() reads the param_axes overrides
    overrides_.body = nullptr;
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    const ArrayInfo& x = in.at(0);
    if (x.shape.size() != 3)
      throw Error("input " + describe(x) + " must be (batch, seq, features); add a Reshape or a PatchEmbed before it");
    const int64_t e = x.shape[2], qkv = qkv_ ? qkv_ : e, out = out_ ? out_ : e;
    if (qkv % heads_)
      throw Error("num_heads: " + std::to_string(heads_) + " does not divide the " + std::to_string(qkv) +
                  " query/key/value features" + (qkv_ ? "" : " (the input's; set qkv_features)"));
    const int64_t kv = qkv / heads_;
    if (rope_ && kv % 2) throw Error("rope: the per-head features (" + std::to_string(kv) + ") must be even: they turn in pairs");
    const std::string embed = x.axes.size() == 3 ? x.axes[2] : "embed";
    InitSpec kernel = kernel_init_;
    for (const char* proj : {"query", "key", "value"}) {
      const std::string k = std::string(proj) + "/kernel", b = std::string(proj) + "/bias";
      // Grouped keys and values have heads of their own, named apart so that a rule can tell them.
      const bool grouped = proj != std::string("query") && kv_heads_ != heads_;
      const int64_t n = grouped ? kv_heads_ : heads_;
      const char* heads_axis = grouped ? "kv_heads" : "heads";
      kernel.in_dims = 1;  // fan-in: the input features, as Flax initialises (embed, heads * kv)
      params.push_back({k, {e, n, kv}, fields::param_axes(overrides_, k, {embed, heads_axis, "kv"}, 3), kernel});
      if (use_bias_) params.push_back({b, {n, kv}, fields::param_axes(overrides_, b, {heads_axis, "kv"}, 2), bias_init_});
    }
    kernel.in_dims = 2;  // fan-in: heads * kv
    params.push_back({"out/kernel", {heads_, kv, out}, fields::param_axes(overrides_, "out/kernel", {"heads", "kv", embed}, 3), kernel});
    if (use_bias_) params.push_back({"out/bias", {out}, fields::param_axes(overrides_, "out/bias", {embed}, 1), bias_init_});
    ArrayInfo y = x;
    y.axes.resize(3);
    y.shape[2] = out;
    return y;
  }
  // Per head: (batch, heads, seq, kv) for q, k and v, (batch, heads, seq, keys) for the weights.
  std::vector<InnerArray> inner_arrays(const std::vector<ArrayInfo>& in) const override {
    const ArrayInfo& x = in.at(0);
    if (x.shape.size() != 3) return {};
    const int64_t qkv = qkv_ ? qkv_ : x.shape[2];
    const std::string batch = x.axes.size() == 3 ? x.axes[0] : "batch", seq = x.axes.size() == 3 ? x.axes[1] : "seq";
    const ArrayInfo head{{x.shape[0], heads_, x.shape[1], qkv / heads_}, {batch, "heads", seq, "kv"}};
    return {{"q", head}, {"k", head}, {"v", head}, {"weights", {{x.shape[0], heads_, x.shape[1], x.shape[1]}, {batch, "heads", seq, "keys"}}}};
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Program& p = ctx.program;
    const std::string& node = ctx.node;
    const int x = ctx.cast(in.at(0));
    const Shape xs = p.shape(x);
    const int64_t b = xs[0], s = xs[1], e = xs[2], qkv = qkv_ ? qkv_ : e, kv = qkv / heads_, out = out_ ? out_ : e;
    // (batch, seq, embed) @ (embed, n * kv) -> (batch, n, seq, kv), the queries and keys turned
    // by their position first where rope is on; grouped keys and values repeated to every head of
    // their group: (batch, kv_heads, seq, kv) -> (batch, kv_heads, group, seq, kv) -> (batch, heads, seq, kv).
    auto project = [&](const std::string& name) {
      const int64_t n = name == "query" ? heads_ : kv_heads_;
      int y = p.apply1(ir::Op::MatMul, {x, reshape(p, ctx.cast(ctx.param(name + "/kernel")), {e, n * kv}, node)}, {}, node);
      if (use_bias_) y = p.apply1(ir::Op::BiasAdd, {y, reshape(p, ctx.cast(ctx.param(name + "/bias")), {n * kv}, node)}, {}, node);
      y = reshape(p, y, {b, s, n, kv}, node);
      if (rope_ && name != "value") {
        ir::Attrs turn;
        turn.dim = 1;
        turn.rope_theta = rope_theta_;
        y = p.apply1(ir::Op::Rope, {y}, turn, node);
      }
      y = transpose(p, y, {0, 2, 1, 3}, node);
      if (n == heads_) return y;
      ir::Attrs repeat;
      repeat.dim = 2;
      repeat.shape = {b, n, heads_ / n, s, kv};
      return reshape(p, p.apply1(ir::Op::Broadcast, {y}, repeat, node), {b, heads_, s, kv}, node);
    };
    ir::Attrs scale;
    scale.alpha = 1.0 / std::sqrt(double(kv));
    const int q = p.apply1(ir::Op::Scale, {project("query")}, scale, node);
    const int k = project("key"), v = project("value");
    if (ctx.outputs)
      for (auto [name, value] : {std::pair{"q", q}, std::pair{"k", k}, std::pair{"v", v}}) (*ctx.outputs)[node + "/" + name] = value;
    ir::Attrs scores;
    scores.trans_b = true;
    ir::Attrs soft;
    soft.causal = causal_;
    int w = p.apply1(ir::Op::Softmax, {p.apply1(ir::Op::BatchMatMul, {q, k}, scores, node)}, soft, node, node + "/weights");
    if (ctx.outputs) (*ctx.outputs)[node + "/weights"] = w;
    if (ctx.training && rate_ > 0) {
      ir::Attrs d;
      d.alpha = rate_;
      d.seed = util::mix64(ctx.seed ^ util::hash_name(node));
      w = p.apply1(ir::Op::Dropout, {w}, d, node);
    }
    // (batch, heads, seq, kv) -> (batch, seq, heads * kv) @ (heads * kv, out)
    int o = p.apply1(ir::Op::BatchMatMul, {w, v}, {}, node);
    o = reshape(p, transpose(p, o, {0, 2, 1, 3}, node), {b, s, qkv}, node);
    int y = p.apply1(ir::Op::MatMul, {o, reshape(p, ctx.cast(ctx.param("out/kernel")), {qkv, out}, node)}, {}, node);
    if (use_bias_) y = p.apply1(ir::Op::BiasAdd, {y, ctx.cast(ctx.param("out/bias"))}, {}, node);
    return y;
  }

 private:
  int64_t heads_ = 4, kv_heads_ = 4, qkv_ = 0, out_ = 0;
  bool causal_ = false, use_bias_ = true, rope_ = false;
  double rate_ = 0.0, rope_theta_ = 10000.0;
  InitSpec kernel_init_, bias_init_;
  Node overrides_;
};

}  // namespace

std::unique_ptr<Layer> make_attention() { return std::make_unique<AttentionLayer>(); }

}  // namespace shardlab::graph
