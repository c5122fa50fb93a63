#include "engine/graph/catalog.h"

#include <cctype>

#include "engine/util/error.h"

namespace shardlab::graph {

namespace {

// Ready-made blocks: palette entries that drop a Repeat with a block already inside.
constexpr const char* kTransformerBlock = "TransformerBlock";

// A pre-norm transformer encoder block (ViT's): LayerNorm, self-attention, residual, LayerNorm,
// Dense 4x -> GELU -> Dense back, residual. Sized for 64 features; edit the Dense sizes to match.
std::shared_ptr<Graph> transformer_block() {
  auto g = std::make_shared<Graph>();
  auto add = [&](const std::string& type, const std::string& name, Json params = Json::object()) {
    Node n = new_node(type, name);
    for (auto it = params.begin(); it != params.end(); ++it) n.params[it.key()] = it.value();
    g->nodes.push_back(n);
  };
  add("LayerNorm", "ln1");
  add("MultiHeadAttention", "attn", {{"num_heads", 4}});
  add("Add", "res1");
  add("LayerNorm", "ln2");
  add("Dense", "mlp1", {{"features", 256}});
  g->nodes.back().param_axes = Json{{"kernel", {"embed", "mlp"}}, {"bias", {"mlp"}}};
  add("GELU", "gelu");
  add("Dense", "mlp2", {{"features", 64}});
  g->nodes.back().param_axes = Json{{"kernel", {"mlp", "embed"}}, {"bias", {"embed"}}};
  add("Add", "res2");
  const Edge edges[] = {{{kCarryNode, "out"}, {"ln1", "in"}},  {{"ln1", "out"}, {"attn", "in"}},   {{kCarryNode, "out"}, {"res1", "a"}},
                        {{"attn", "out"}, {"res1", "b"}},     {{"res1", "out"}, {"ln2", "in"}},   {{"ln2", "out"}, {"mlp1", "in"}},
                        {{"mlp1", "out"}, {"gelu", "in"}},    {{"gelu", "out"}, {"mlp2", "in"}},  {{"res1", "out"}, {"res2", "a"}},
                        {{"mlp2", "out"}, {"res2", "b"}}};
  g->edges.assign(std::begin(edges), std::end(edges));
  g->output = "res2";
  return g;
}

}  // namespace

LayerInfo layer_info(const std::string& type) {
  if (type == kTransformerBlock) {
    LayerInfo info = layer_info("Repeat");
    info.type = type;
    info.summary = "ready-made Repeat of pre-norm transformer blocks: LayerNorm, attention, residual, GELU MLP, residual";
    return info;
  }
  std::unique_ptr<Layer> l = create_layer(type);
  if (!l) throw Error("unknown layer type '" + type + "'");
  return {type, l->category(), l->summary(), l->input_ports(), l->fields()};
}

std::vector<LayerInfo> layer_catalog() {
  std::vector<LayerInfo> out;
  for (const std::string& t : layer_types()) out.push_back(layer_info(t));
  out.push_back(layer_info(kTransformerBlock));
  return out;
}

Node new_node(const std::string& type, const std::string& name) {
  LayerInfo info = layer_info(type);
  Node n;
  n.name = name;
  n.type = type == kTransformerBlock ? "Repeat" : type;
  for (const FieldInfo& f : info.fields)
    if (f.required) n.params[f.key] = f.value;
  if (type == kTransformerBlock) {
    n.body = transformer_block();
  } else if (type == "Repeat") {
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
