// Factories of the built-in layers (one per file in this folder), listed in registry.cpp.
#pragma once

#include <memory>

#include "engine/graph/layer.h"

namespace shardlab::graph {

std::unique_ptr<Layer> make_input();
std::unique_ptr<Layer> make_dense();
std::unique_ptr<Layer> make_relu();
std::unique_ptr<Layer> make_gelu();
std::unique_ptr<Layer> make_tanh();
std::unique_ptr<Layer> make_layer_norm();
std::unique_ptr<Layer> make_dropout();
std::unique_ptr<Layer> make_add();
std::unique_ptr<Layer> make_flatten();
std::unique_ptr<Layer> make_repeat();
std::unique_ptr<Layer> make_softmax();
std::unique_ptr<Layer> make_reshape();
std::unique_ptr<Layer> make_embed();
std::unique_ptr<Layer> make_attend();
std::unique_ptr<Layer> make_patch_embed();
std::unique_ptr<Layer> make_position_embedding();
std::unique_ptr<Layer> make_attention();
std::unique_ptr<Layer> make_mean_pool();
std::unique_ptr<Layer> make_conv2d();
std::unique_ptr<Layer> make_max_pool2d();
std::unique_ptr<Layer> make_avg_pool2d();
std::unique_ptr<Layer> make_sigmoid();
std::unique_ptr<Layer> make_silu();
std::unique_ptr<Layer> make_multiply();
std::unique_ptr<Layer> make_concatenate();
std::unique_ptr<Layer> make_rms_norm();
std::unique_ptr<Layer> make_group_norm();

}  // namespace shardlab::graph
