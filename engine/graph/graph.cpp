#include "engine/graph/graph.h"

namespace shardlab::graph {

const Node* Graph::find(const std::string& name) const {
  for (const Node& n : nodes)
    if (n.name == name) return &n;
  return nullptr;
}

Node* Graph::find(const std::string& name) {
  return const_cast<Node*>(static_cast<const Graph*>(this)->find(name));
}

}  // namespace shardlab::graph
