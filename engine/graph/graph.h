// The layer graph as the user edits it: named nodes with typed ports, edges between ports, and
// layer parameters kept as the JSON the project file holds (so a save writes back what was read).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace shardlab::graph {

using Json = nlohmann::ordered_json;

struct Endpoint {
  std::string node;  // "@in" inside a Repeat body: the block's carried input
  std::string port;
  std::string str() const { return node + "." + port; }
};

struct Edge {
  Endpoint from, to;
};

struct Graph;

struct Node {
  std::string name;
  std::string type;
  Json params = Json::object();
  Json param_axes = Json::object();  // per-parameter logical axis overrides, e.g. {"kernel": ["embed","hidden"]}
  Json output_axes;                  // logical names of the output, overriding inference (null: infer)
  // The node's own precision over the project's: {"dtype": ..., "param_dtype": ...} (null: none).
  Json precision;
  std::shared_ptr<Graph> body;       // Repeat's block
};

struct Graph {
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  std::string output;  // Repeat bodies only: the node whose output is carried to the next layer

  const Node* find(const std::string& name) const;
  Node* find(const std::string& name);
};

// The reserved node name a Repeat body uses for its carried input.
inline constexpr const char* kCarryNode = "@in";

}  // namespace shardlab::graph
