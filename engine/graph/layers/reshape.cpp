// Reshape: a new per-example shape (the batch dimension stays) with a logical name per new
// dimension, so the sharding rules can address what the reshape made.
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class ReshapeLayer : public Layer {
 public:
  std::string summary() const override { return "a new per-example shape, with a logical name per dimension"; }
  std::string category() const override { return "Structure"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"shape", K::IntList, Json::array({16, 16}), true, "per-example shape (the batch dimension stays)"},
            {"axes", K::NameList, Json::array(), false, "logical axis name per dimension (default: dim0, ..., embed)"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"shape", "axes"});
    shape_ = fields::per_example_shape(node.params, "[16, 49]");
    if (shape_.empty()) throw Error("shape: expected a list of positive integers, got []");
    axes_ = fields::axis_names(node.params, shape_.size());
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override {
    const ArrayInfo& x = in.at(0);
    const Shape rest(x.shape.begin() + 1, x.shape.end());
    if (numel(rest) != numel(shape_))
      throw Error("shape: " + shape_str(shape_) + " holds " + std::to_string(numel(shape_)) + " values per example, the input " +
                  describe(x) + " " + std::to_string(numel(rest)));
    ArrayInfo out{{x.shape.at(0)}, {x.axes.empty() ? "batch" : x.axes[0]}};
    out.shape.insert(out.shape.end(), shape_.begin(), shape_.end());
    out.axes.insert(out.axes.end(), axes_.begin(), axes_.end());
    return out;
  }
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    ir::Attrs a;
    a.shape = {ctx.program.shape(in.at(0)).at(0)};
    a.shape.insert(a.shape.end(), shape_.begin(), shape_.end());
    if (a.shape == ctx.program.shape(in[0])) return in[0];
    return ctx.program.apply1(ir::Op::Reshape, {in[0]}, a, ctx.node);
  }

 private:
  Shape shape_;
  std::vector<std::string> axes_;
};

}  // namespace

std::unique_ptr<Layer> make_reshape() { return std::make_unique<ReshapeLayer>(); }

}  // namespace shardlab::graph
