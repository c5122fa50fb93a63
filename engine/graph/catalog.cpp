#include "engine/graph/catalog.h"

#include <cctype>

#include "engine/util/error.h"

namespace shardlab::graph {

LayerInfo layer_info(const std::string& type) {
  std::unique_ptr<Layer> l = create_layer(type);
  if (!l) throw Error("unknown layer type '" + type + "'");
  return {type, l->category(), l->summary(), l->input_ports(), l->fields()};
}

std::vector<LayerInfo> layer_catalog() {
  std::vector<LayerInfo> out;
  for (const std::string& t : layer_types()) out.push_back(layer_info(t));
  return out;
}

Node new_node(const std::string& type, const std::string& name) {
  LayerInfo info = layer_info(type);
  Node n;
  n.name = name;
  n.type = type;
  for (const FieldInfo& f : info.fields)
    if (f.required) n.params[f.key] = f.value;
  if (type == "Repeat") {
    n.body = std::make_shared<Graph>();
    n.body->nodes.push_back(new_node("ReLU", "relu"));
    n.body->edges.push_back({{kCarryNode, "out"}, {"relu", "in"}});
    n.body->output = "relu";
  }
  return n;
}

std::string unique_node_name(const Graph& g, const std::string& base) {
  // "dense3" -> stem "dense", so a copy of dense3 becomes dense4, not dense32.
  std::string stem = base;
  while (!stem.empty() && std::isdigit(static_cast<unsigned char>(stem.back()))) stem.pop_back();
  if (stem.empty()) stem = base;
  if (!g.find(base)) return base;
  for (int i = 2;; ++i)
    if (!g.find(stem + std::to_string(i))) return stem + std::to_string(i);
}

}  // namespace shardlab::graph
