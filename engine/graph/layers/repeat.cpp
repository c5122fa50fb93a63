// Repeat: a block applied `count` times in sequence, its parameters stacked on a leading 'layer'
// axis like flax.linen.scan with variable_axes={"params": 0}. The block's input and output must
// have the same shape, since each layer's output is the next one's input.
#include <map>

#include "engine/graph/analysis.h"
#include "engine/graph/layers/layers.h"
#include "engine/graph/lower.h"
#include "engine/util/error.h"
#include "engine/util/hash.h"

namespace shardlab::graph {

namespace {

class RepeatLayer : public Layer {
 public:
  std::string summary() const override { return "a block applied count times, parameters stacked on a 'layer' axis (nn.scan)"; }
  std::string category() const override { return "Blocks"; }
  std::vector<FieldInfo> fields() const override {
    return {{"count", FieldInfo::Kind::Int, 2, true, "how many times the block runs"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"count"});
    count_ = fields::positive_int(node.params, "count");
    // The block is unrolled once per layer into the step program, so the count bounds its size.
    if (count_ > kMaxCount)
      throw Error("count: " + std::to_string(count_) + " is more than " + std::to_string(kMaxCount) +
                  " (the block is unrolled once per layer)");
    if (!node.body) throw Error("body: missing (a Repeat needs a block of nodes)");
    if (node.body->output.empty()) throw Error("body.output: missing (the node whose output feeds the next layer)");
    if (!node.body->find(node.body->output)) throw Error("body.output: there is no node '" + node.body->output + "' in the block");
    body_ = node.body;
    name_ = node.name;
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>& params) const override {
    GraphReport r = analyze_body(in.at(0), name_);
    const NodeReport* out = r.find(name_ + "/" + body_->output);
    if (!out) throw Error("body.output: node '" + body_->output + "' has no output");
    if (out->output.shape != in[0].shape)
      throw Error("block output " + describe(out->output) + " differs from its input " + describe(in[0]) +
                  " (each layer's output feeds the next)");
    for (const NodeReport& n : r.nodes)
      for (const ParamInfo& p : n.params) {
        ParamInfo s = p;
        s.name = n.name.substr(name_.size() + 1) + "/" + p.name;
        s.shape.insert(s.shape.begin(), count_);
        s.axes.insert(s.axes.begin(), "layer");
        s.layers = count_;
        params.push_back(s);
      }
    return in[0];
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    const Shape& carry_shape = ctx.program.shape(in.at(0));
    GraphReport r = analyze_body(ArrayInfo{carry_shape, std::vector<std::string>(carry_shape.size(), "")}, ctx.node);
    // Split each stacked parameter into its per-layer slices once.
    std::map<std::string, std::vector<int>> slices;
    for (const NodeReport& n : r.nodes)
      for (const ParamInfo& p : n.params) {
        std::string path = n.name.substr(ctx.node.size() + 1) + "/" + p.name;
        slices[path] = ctx.program.apply(ir::Op::Unstack, {ctx.param(path)}, {}, ctx.node, ctx.node + "/" + path);
      }
    int carry = in[0];
    for (int64_t i = 0; i < count_; ++i) {
      LowerOptions opt{ctx.training, util::mix64(ctx.seed ^ uint64_t(i + 1)), ctx.node + "/", ctx.outputs, ctx.compute};
      const size_t begin = ctx.program.instrs.size();
      carry = lower_graph(ctx.program, *body_, r, carry,
                          [&](const std::string& path) { return slices.at(path).at(size_t(i)); }, body_->output, opt);
      // Which layer each instruction computes, so a pipeline can give it to that layer's stage (an
      // enclosing Repeat's tag, applied after this one's, wins).
      for (size_t k = begin; k < ctx.program.instrs.size(); ++k) {
        ctx.program.instrs[k].layer = i;
        ctx.program.instrs[k].layers = count_;
      }
    }
    return carry;
  }

 private:
  GraphReport analyze_body(const ArrayInfo& carry, const std::string& path) const {
    GraphReport r = analyze(*body_, carry.shape.empty() ? 1 : carry.shape[0], &carry, path + "/");
    if (!r.ok()) throw Error("in its block: " + r.errors.front());
    return r;
  }

  static constexpr int64_t kMaxCount = 10000;
  int64_t count_ = 1;
  std::shared_ptr<Graph> body_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Layer> make_repeat() { return std::make_unique<RepeatLayer>(); }

}  // namespace shardlab::graph
