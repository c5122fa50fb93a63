// A small MLP with odd sizes, for the tests of GEMM epilogue fusion: its step has full and edge
// GEMM tiles, bias + relu forward, relu_grad backward, and a bias-only last layer. `batch` rows (over
// 64, a bias's gradient is summed in several runs of rows on the CUDA backend).
#pragma once

#include "engine/runtime/train_step.h"

namespace shardlab::testing {

inline runtime::StepProgram odd_mlp_step(int64_t batch = 29) {
  const char* text = R"({
    "format": "shardlab.project", "version": 1,
    "graph": {"nodes": [
        {"name": "x", "type": "Input", "params": {"shape": [37]}},
        {"name": "d1", "type": "Dense", "params": {"features": 70}}, {"name": "r1", "type": "ReLU"},
        {"name": "d2", "type": "Dense", "params": {"features": 45}}, {"name": "r2", "type": "ReLU"},
        {"name": "d3", "type": "Dense", "params": {"features": 3}}],
      "edges": [{"from": "x.out", "to": "d1.in"}, {"from": "d1.out", "to": "r1.in"}, {"from": "r1.out", "to": "d2.in"},
                {"from": "d2.out", "to": "r2.in"}, {"from": "r2.out", "to": "d3.in"}]},
    "loss": {"type": "mean_squared_error", "output": "d3"},
    "optimizer": {"type": "adam"},
    "data": {"type": "synthetic", "kind": "normal", "feature_shape": [37], "target_shape": [3], "examples": 64},
    "training": {"batch_size": 29, "steps": 1}
  })";
  const project::Project p = project::parse_project(text, "odd-mlp.shardlab.json");
  return runtime::build_step(p, project::analyze_project(p), batch, true);
}

}  // namespace shardlab::testing
