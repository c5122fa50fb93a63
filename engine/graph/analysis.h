// Validation and shape inference over a layer graph: wiring (unknown types, dangling edges,
// missing inputs, cycles), each layer's fields, and every node's output and parameter shapes.
// Errors are collected per node, so an editor can show each one where it belongs.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/graph/graph.h"
#include "engine/graph/layer.h"
#include "engine/util/diagnostic.h"

namespace shardlab::graph {

struct NodeReport {
  std::string name;  // path: "blocks/W1" inside a Repeat
  std::string type;
  std::shared_ptr<Layer> layer;  // null when the node failed to configure
  std::vector<ArrayInfo> inputs;
  ArrayInfo output;
  std::vector<ParamInfo> params;
  std::vector<InnerArray> inner;  // arrays made inside the layer (attention's weights)
  int64_t param_count = 0;
  double flops = 0;   // forward FLOPs of one step at this batch size
  std::string error;  // the node's own error; empty when it is fine
  bool inferred() const { return !output.shape.empty(); }
  std::vector<NodeReport> body;  // Repeat: its block's nodes (one layer)
  // The node's own precision (its "precision" field), over the project's policy where set.
  std::optional<DType> dtype, param_dtype;
};

struct GraphReport {
  // Every node once: in topological order, then those on or after a cycle. A node that could not be
  // inferred has an empty output shape, and its own error if it has one (none when it only waits
  // on a failed upstream node).
  std::vector<NodeReport> nodes;
  std::vector<std::string> errors;  // every error, each naming its node and field
  std::vector<Diagnostic> problems;  // the same errors as data: the nodes at fault (a block's inner ones too)
  bool ok() const { return errors.empty(); }
  const NodeReport* find(const std::string& name) const;
};

// `batch` sizes the Input; `carry` is given for a Repeat body (its "@in"), null for a model.
GraphReport analyze(const Graph& g, int64_t batch, const ArrayInfo* carry = nullptr, const std::string& prefix = "");

// Topological order of node indices; nodes on a cycle are returned in `cyclic`.
std::vector<size_t> topological_order(const Graph& g, std::vector<std::string>* cyclic = nullptr);

}  // namespace shardlab::graph
