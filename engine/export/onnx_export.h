// ONNX export: a project's inference graph (dropout off) with given parameters as initializers, as
// an ONNX model of IR version 8 and opset 17 (what Debian's ONNX 1.12 writes and checks).
//
// Layer by layer:
//   Input      the graph input, named after the node, float [batch, ...] with a symbolic batch
//   Dense      MatMul, then Add of the bias (if any)
//   ReLU, Tanh Relu, Tanh
//   GELU       the engine's tanh approximation spelt out exactly with basic ops,
//              0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), not ONNX's erf form (opset 20's
//              Gelu, or 0.5 * x * (1 + erf(x / sqrt 2))), which differs from it by up to 4.7e-4 (at |x| = 2.7)
//   LayerNorm  LayerNormalization over the last axis with the layer's epsilon (a ones scale when
//              the layer learns none)
//   Add        Add;  Flatten: Flatten(axis=1);  Dropout: Identity;  Softmax: Softmax(axis=-1)
//   Reshape    Reshape to [0, shape...] (the batch kept)
//   Embed      Cast of the ids to int64, then Gather of the table's rows
//   PatchEmbed Reshape into tiles, Transpose to the patch grid, Reshape to (batch, patches, p*p*C),
//              MatMul by the kernel flattened to (p*p*C, features), Add of the bias
//   PositionEmbedding  Add of the (seq, features) array, broadcast over the batch
//   MultiHeadAttention q, k, v projections (MatMul, Add, Reshape, Transpose), q scaled by 1/sqrt(kv),
//              MatMul scores, Add of a constant -inf mask above the diagonal when causal, Softmax,
//              MatMul by v, Transpose and Reshape back, the output projection
//   MeanPool   ReduceMean over axis 1
//   Repeat     unrolled: layer i's nodes are "<repeat>/<i>/<node>" and its parameters the i-th
//              slices of the stacked ones, "<repeat>/<i>/<node>/<param>"
// Every tensor between nodes is named after the node that makes it; the graph output is the
// loss's output node (the logits or prediction, before any loss). Anything else is refused with an
// Error naming the node and its type.
//
// Built only where CMake finds ONNX and protobuf (libonnx-dev); elsewhere every function but
// onnx_available() throws an Error saying the build has no ONNX.
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "engine/graph/analysis.h"
#include "engine/project/project.h"
#include "engine/tensor/tensor.h"

namespace shardlab::exporter {

inline constexpr int kOnnxIrVersion = 8;
inline constexpr int kOnnxOpset = 17;

// False when this build has no ONNX.
bool onnx_available();

struct OnnxModel {
  std::string bytes;  // the serialised ModelProto
  int64_t nodes = 0, initializers = 0;
  std::string input, output;  // graph input and output names
};

// `params`: parameter path ("dense1/kernel", "blocks/W1/kernel" stacked) -> values, each of the
// shape the project gives it. `report` is analyze_project(project)'s; the first form makes it.
// `doc` goes into the model's doc_string.
// `dtype`: what the graph computes in and its initializers hold (float32, float16, bfloat16); its
// input and output stay float32, with a Cast after the one and before the other.
OnnxModel onnx_model(const project::Project& project, const std::map<std::string, Tensor>& params,
                     const std::string& doc = "", DType dtype = DType::F32);
OnnxModel onnx_model(const project::Project& project, const graph::GraphReport& report,
                     const std::map<std::string, Tensor>& params, const std::string& doc = "", DType dtype = DType::F32);

// onnx_model() written atomically to `out`; returns a one-line summary.
std::string export_onnx(const project::Project& project, const std::map<std::string, Tensor>& params,
                        const std::filesystem::path& out, const std::string& doc = "", DType dtype = DType::F32);

}  // namespace shardlab::exporter
