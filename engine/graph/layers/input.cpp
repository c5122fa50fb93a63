// Input: where a batch enters the graph. Its shape is per example; the batch dimension is added.
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
    if (!node.params.contains("shape")) throw Error("shape: missing (the per-example shape, e.g. [28, 28])");
    const Json& s = node.params["shape"];
    if (!s.is_array()) throw Error("shape: expected a list of positive integers, got " + s.dump());
    for (const Json& d : s) {
      if (!d.is_number_integer() || d.get<int64_t>() <= 0)
        throw Error("shape: bad dimension " + d.dump() + " (expected a positive integer)");
      shape_.push_back(d.get<int64_t>());
    }
    axes_ = node.params.contains("axes") ? fields::names(node.params["axes"], "axes") : std::vector<std::string>{};
    if (axes_.empty())
      for (size_t i = 0; i < shape_.size(); ++i) axes_.push_back(i + 1 == shape_.size() ? "embed" : "dim" + std::to_string(i));
    if (axes_.size() != shape_.size())
      throw Error("axes: " + std::to_string(axes_.size()) + " names for a shape of rank " + std::to_string(shape_.size()));
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
