// What an editor needs to offer the layer types: each type's group, summary, input ports and
// fields, and a fresh node of a type with its required fields filled in (a Repeat with a body).
#pragma once

#include <string>
#include <vector>

#include "engine/graph/layer.h"

namespace shardlab::graph {

struct LayerInfo {
  std::string type;
  std::string category;
  std::string summary;
  std::vector<std::string> inputs;  // port names; Input has none
  std::vector<FieldInfo> fields;
};

// Every registered layer type, in registry order, then the ready-made blocks ("TransformerBlock":
// a Repeat with a transformer block inside).
std::vector<LayerInfo> layer_catalog();
// Throws Error for an unknown type.
LayerInfo layer_info(const std::string& type);
// A node of `type` named `name` that configures: required fields at their starting values; a
// Repeat gets a one-node block (ReLU) so it is valid as dropped; a ready-made block is a Repeat.
Node new_node(const std::string& type, const std::string& name);
// `base` if no node of `g` has that name, else the first free of base2, base3, ... (a trailing
// number of `base` is dropped first: dense3 -> dense4).
std::string unique_node_name(const Graph& g, const std::string& base);

}  // namespace shardlab::graph
