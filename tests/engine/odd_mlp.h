// Small MLPs for the tests of GEMM epilogue fusion: their steps have bias + relu forward, relu_grad
// backward, and a bias-only last layer. `batch` rows (over 64, a bias's gradient is summed in
// several runs of rows on the CUDA backend). odd_mlp_step's odd sizes give full and edge GEMM tiles;
// aligned_mlp_step's hidden widths, multiples of 8, take the CUDA kernels' 16-byte paths;
// repeat_mlp_step's Repeat unstacks its parameters and stacks their gradients.
#pragma once

#include <string>

#include "engine/runtime/train_step.h"

namespace shardlab::testing {

// An MLP of input `in`, hidden layers `h1` and `h2` and an output of 3.
inline runtime::StepProgram mlp_step(int64_t batch, int in, int h1, int h2) {
  const std::string text = R"({
    "format": "shardlab.project", "version": 1,
    "graph": {"nodes": [
        {"name": "x", "type": "Input", "params": {"shape": [)" + std::to_string(in) + R"(]}},
        {"name": "d1", "type": "Dense", "params": {"features": )" + std::to_string(h1) + R"(}}, {"name": "r1", "type": "ReLU"},
        {"name": "d2", "type": "Dense", "params": {"features": )" + std::to_string(h2) + R"(}}, {"name": "r2", "type": "ReLU"},
        {"name": "d3", "type": "Dense", "params": {"features": 3}}],
      "edges": [{"from": "x.out", "to": "d1.in"}, {"from": "d1.out", "to": "r1.in"}, {"from": "r1.out", "to": "d2.in"},
                {"from": "d2.out", "to": "r2.in"}, {"from": "r2.out", "to": "d3.in"}]},
    "loss": {"type": "mean_squared_error", "output": "d3"},
    "optimizer": {"type": "adam"},
    "data": {"type": "synthetic", "kind": "normal", "feature_shape": [)" + std::to_string(in) + R"(], "target_shape": [3], "examples": 64},
    "training": {"batch_size": 29, "steps": 1}
  })";
  const project::Project p = project::parse_project(text, "odd-mlp.shardlab.json");
  return runtime::build_step(p, project::analyze_project(p), batch, true);
}

inline runtime::StepProgram odd_mlp_step(int64_t batch = 29) { return mlp_step(batch, 37, 70, 45); }

// A project of input `in` -> Dense `width` -> Repeat `count` x (Dense `width`, ReLU) -> Dense `out`,
// MSE, Adam: a Repeat's unstacked parameters and stacked gradients, as seed 003's MLP has.
// `precision` is the project's "precision" object; `accumulate` its microbatches.
inline std::string repeat_mlp_text(int in, int width, int count, int out, const std::string& precision = "{}",
                                   int accumulate = 1) {
  const std::string i = std::to_string(in), w = std::to_string(width), o = std::to_string(out);
  return R"({
    "format": "shardlab.project", "version": 1,
    "graph": {"nodes": [
        {"name": "x", "type": "Input", "params": {"shape": [)" + i + R"(], "axes": ["embed"]}},
        {"name": "d0", "type": "Dense", "params": {"features": )" + w + R"(}}, {"name": "r0", "type": "ReLU"},
        {"name": "layers", "type": "Repeat", "params": {"count": )" + std::to_string(count) + R"(}, "body": {
          "nodes": [{"name": "dense", "type": "Dense", "params": {"features": )" + w + R"(}}, {"name": "relu", "type": "ReLU"}],
          "edges": [{"from": "@in.out", "to": "dense.in"}, {"from": "dense.out", "to": "relu.in"}], "output": "relu"}},
        {"name": "head", "type": "Dense", "params": {"features": )" + o + R"(}}],
      "edges": [{"from": "x.out", "to": "d0.in"}, {"from": "d0.out", "to": "r0.in"}, {"from": "r0.out", "to": "layers.in"},
                {"from": "layers.out", "to": "head.in"}]},
    "loss": {"type": "mean_squared_error", "output": "head"},
    "optimizer": {"type": "adam"},
    "precision": )" + precision + R"(,
    "data": {"type": "synthetic", "kind": "normal", "feature_shape": [)" + i + R"(], "target_shape": [)" + o + R"(], "examples": 64},
    "training": {"batch_size": 8, "accumulate": )" + std::to_string(accumulate) + R"(, "steps": 1}
  })";
}

// Input 40 -> Dense 48 -> Repeat 3 x (Dense 48, ReLU) -> Dense 3.
inline runtime::StepProgram repeat_mlp_step(int64_t batch) {
  const project::Project p = project::parse_project(repeat_mlp_text(40, 48, 3, 3), "repeat-mlp.shardlab.json");
  return runtime::build_step(p, project::analyze_project(p), batch, true);
}
inline runtime::StepProgram aligned_mlp_step(int64_t batch) { return mlp_step(batch, 40, 72, 48); }

}  // namespace shardlab::testing
