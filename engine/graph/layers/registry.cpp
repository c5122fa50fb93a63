#include <utility>

#include "engine/graph/layers/layers.h"

namespace shardlab::graph {

namespace {
using Factory = std::unique_ptr<Layer> (*)();
const std::pair<const char*, Factory> kLayers[] = {
    {"Input", make_input},       {"Dense", make_dense},          {"ReLU", make_relu},
    {"GELU", make_gelu},         {"Tanh", make_tanh},            {"Sigmoid", make_sigmoid},
    {"SiLU", make_silu},         {"LayerNorm", make_layer_norm}, {"RMSNorm", make_rms_norm},
    {"GroupNorm", make_group_norm},
    {"Dropout", make_dropout},   {"Add", make_add},              {"Multiply", make_multiply},
    {"Concatenate", make_concatenate},
    {"Flatten", make_flatten},   {"Repeat", make_repeat},        {"Softmax", make_softmax},
    {"Reshape", make_reshape},   {"Embed", make_embed},          {"PatchEmbed", make_patch_embed},
    {"PositionEmbedding", make_position_embedding},              {"MultiHeadAttention", make_attention},
    {"MeanPool", make_mean_pool}, {"Conv2D", make_conv2d},       {"MaxPool2D", make_max_pool2d},
    {"AvgPool2D", make_avg_pool2d}, {"Attend", make_attend},
};
}  // namespace

std::unique_ptr<Layer> create_layer(const std::string& type) {
  for (const auto& [name, make] : kLayers)
    if (type == name) return make();
  return nullptr;
}

std::vector<std::string> layer_types() {
  std::vector<std::string> out;
  for (const auto& entry : kLayers) out.push_back(entry.first);
  return out;
}

std::string describe(const ArrayInfo& a) {
  std::string s = "(";
  for (size_t i = 0; i < a.shape.size(); ++i) {
    if (i) s += ", ";
    if (i < a.axes.size()) s += a.axes[i] + " ";
    s += std::to_string(a.shape[i]);
  }
  return s + ")";
}

}  // namespace shardlab::graph
