// MeanPool: the mean over the sequence axis, (batch, seq, features) -> (batch, features), as ViT's
// "gap" classifier pools its tokens.
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class MeanPoolLayer : public Layer {
 public:
  std::string summary() const override { return "mean over the sequence: (batch, seq, features) -> (batch, features)"; }
  std::string category() const override { return "Structure"; }
  void configure(const Node& node) override { fields::only(node.params, {}); }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override {
    const ArrayInfo& x = in.at(0);
    if (x.shape.size() != 3) throw Error("input " + describe(x) + " must be (batch, seq, features)");
    ArrayInfo out = x;
    out.shape.erase(out.shape.begin() + 1);
    if (out.axes.size() == 3) out.axes.erase(out.axes.begin() + 1);
    return out;
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Attrs sum;
    sum.dim = 1;
    ir::Attrs mean;
    mean.alpha = 1.0 / double(ctx.program.shape(in.at(0))[1]);
    return ctx.program.apply1(ir::Op::Scale, {ctx.program.apply1(ir::Op::ReduceAxis, {in[0]}, sum, ctx.node)}, mean, ctx.node);
  }
};

}  // namespace

std::unique_ptr<Layer> make_mean_pool() { return std::make_unique<MeanPoolLayer>(); }

}  // namespace shardlab::graph
