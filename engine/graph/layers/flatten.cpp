// Flatten: folds every dimension after the batch into one feature axis.
#include "engine/graph/layers/layers.h"

namespace shardlab::graph {

namespace {

class FlattenLayer : public Layer {
 public:
  std::string summary() const override { return "merge every dimension after the batch into one"; }
  std::string category() const override { return "Structure"; }
  std::vector<FieldInfo> fields() const override {
    return {{"axis_name", FieldInfo::Kind::String, "embed", false, "logical name of the merged dimension"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"axis_name"});
    axis_ = fields::string(node.params, "axis_name", "embed");
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override {
    const ArrayInfo& x = in.at(0);
    Shape rest(x.shape.begin() + 1, x.shape.end());
    return ArrayInfo{{x.shape.at(0), numel(rest)}, {x.axes.empty() ? "batch" : x.axes[0], axis_}};
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    const Shape& s = ctx.program.shape(in.at(0));
    ir::Attrs a;
    a.shape = {s.at(0), numel(s) / s.at(0)};
    if (a.shape == s) return in[0];
    return ctx.program.apply1(ir::Op::Reshape, {in[0]}, a, ctx.node);
  }

 private:
  std::string axis_ = "embed";
};

}  // namespace

std::unique_ptr<Layer> make_flatten() { return std::make_unique<FlattenLayer>(); }

}  // namespace shardlab::graph
