// Input: where a batch enters the graph. Its shape is per example; the batch dimension is added.
#include "engine/graph/layers/common_fields.h"
#include "engine/graph/layers/layers.h"
#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

class InputLayer : public Layer {
 public:
  std::string summary() const override { return "where a batch enters: the per-example shape and its logical axes"; }
  std::string category() const override { return "Data"; }
  std::vector<FieldInfo> fields() const override {
    using K = FieldInfo::Kind;
    return {{"shape", K::IntList, Json::array({784}), true, "per-example shape (the batch dimension is added)"},
            {"axes", K::NameList, Json::array(), false, "logical axis name per dimension (default: ..., embed)"}};
  }
  std::vector<std::string> input_ports() const override { return {}; }
  void configure(const Node& node) override {
    fields::only(node.params, {"shape", "axes"});
    shape_ = fields::per_example_shape(node.params, "[28, 28]");
    axes_ = fields::axis_names(node.params, shape_.size());
  }
  ArrayInfo infer(const std::vector<ArrayInfo>& in, std::vector<ParamInfo>&) const override {
    // The analysis passes the batch as a one-dimensional pseudo input.
    ArrayInfo out{{in.at(0).shape.at(0)}, {"batch"}};
    out.shape.insert(out.shape.end(), shape_.begin(), shape_.end());
    out.axes.insert(out.axes.end(), axes_.begin(), axes_.end());
    return out;
  }
  int lower(LowerContext&, const std::vector<int>& in) const override { return in.at(0); }

 private:
  Shape shape_;
  std::vector<std::string> axes_;
};

}  // namespace

std::unique_ptr<Layer> make_input() { return std::make_unique<InputLayer>(); }

}  // namespace shardlab::graph
