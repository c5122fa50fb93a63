// Lowering: a checked layer graph becomes primitives in a Program (the forward pass).
#pragma once

#include <functional>
#include <map>
#include <string>

#include "engine/graph/analysis.h"
#include "engine/ir/program.h"

namespace shardlab::graph {

struct LowerOptions {
  bool training = true;  // dropout on
  uint64_t seed = 0;
  std::string prefix;    // node path prefix ("blocks/" inside a Repeat)
  // Where set, filled with every node's output value by path, block nodes included (their last layer's).
  std::map<std::string, int>* outputs = nullptr;
  // The project's compute dtype (precision.dtype): what a node computes in unless it or its layer
  // type says otherwise.
  DType dtype = DType::F32;
};

// Lowers `g` in the report's order, feeding `input` to the Input node (or to "@in" in a block).
// `param(path)` gives the value of a parameter, path relative to `g` ("dense1/kernel").
// Returns the output value of node `output_node`.
int lower_graph(ir::Program& p, const Graph& g, const GraphReport& report, int input,
                const std::function<int(const std::string&)>& param, const std::string& output_node,
                const LowerOptions& opt);

}  // namespace shardlab::graph
