// Concatenate: two inputs joined along one axis (jnp.concatenate([a, b], axis)), the skip
// connection of a U-Net (channels) or two feature branches side by side. Every other dimension
// must agree; the joined axis keeps a's logical name. Its gradient cuts the cotangent back apart.
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class ConcatenateLayer : public Layer {
 public:
  std::string summary() const override { return "a and b joined along an axis (jnp.concatenate): a skip connection, two branches"; }
  std::string category() const override { return "Structure"; }
  std::vector<std::string> input_ports() const override { return {"a", "b"}; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"axis", K::Int, -1, false, "the axis to join along: -1 the last (features, channels), 1 the first after the batch"}};
  }
  void configure(const Node& node) override {
    fields::only(node.params, {"axis"});
    const Json& p = node.params;
    axis_ = -1;
    if (p.contains("axis")) {
      if (!p["axis"].is_number_integer()) throw Error("axis: expected an integer, got " + p["axis"].dump());
      axis_ = p["axis"].get<int64_t>();
    }
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override {
    const ArrayInfo &a = in.at(0), &b = in.at(1);
    const size_t d = dim(a.shape);
    if (a.shape.size() != b.shape.size())
      throw Error("inputs a " + describe(a) + " and b " + describe(b) + " have different ranks");
    for (size_t i = 0; i < a.shape.size(); ++i)
      if (i != d && a.shape[i] != b.shape[i])
        throw Error("inputs a " + describe(a) + " and b " + describe(b) + " differ in dimension " + std::to_string(i) +
                    ", not only along axis " + std::to_string(axis_));
    ArrayInfo out = a;
    out.shape[d] += b.shape[d];
    return out;
  }
  // Inputs of different dtypes meet in the wider one, as JAX promotes.
  int lower(LowerContext& ctx, const std::vector<int>& in) const override {
    const DType a = ctx.program.dtype(in.at(0)), b = ctx.program.dtype(in.at(1));
    const DType to = a == b ? a : DType::F32;
    ir::Attrs attrs;
    attrs.dim = int64_t(dim(ctx.program.shape(in[0])));
    return ctx.program.apply1(ir::Op::Concat,
                              {ir::convert_to(ctx.program, in[0], to, ctx.node), ir::convert_to(ctx.program, in[1], to, ctx.node)}, attrs,
                              ctx.node);
  }

 private:
  // The joined dimension of an input of `shape` (dimension 0 is the batch, which is not joined).
  size_t dim(const Shape& shape) const {
    const int64_t rank = int64_t(shape.size());
    const int64_t d = axis_ < 0 ? rank + axis_ : axis_;
    if (d < 1 || d >= rank)
      throw Error("axis: " + std::to_string(axis_) + " is not an axis of the inputs' " + std::to_string(rank - 1) +
                  " dimensions after the batch (use 1 to " + std::to_string(rank - 1) + ", or -1 for the last)");
    return size_t(d);
  }
  int64_t axis_ = -1;
};

}  // namespace

std::unique_ptr<Layer> make_concatenate() { return std::make_unique<ConcatenateLayer>(); }

}  // namespace shardlab::graph
