#include "ui/document/graph_edits.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <set>

namespace shardlab::ui::edits {

namespace {

Json& editor_section(project::Project& p, const char* key) {
  if (!p.editor.is_object()) p.editor = Json::object();
  if (!p.editor.contains(key) || !p.editor[key].is_object()) p.editor[key] = Json::object();
  return p.editor[key];
}

void erase_editor_entry(project::Project& p, const char* key, const std::string& path) {
  if (!p.editor.is_object() || !p.editor.contains(key)) return;
  Json& sec = p.editor[key];
  // The node and, for a Repeat, everything inside it.
  for (auto it = sec.begin(); it != sec.end();) {
    if (it.key() == path || it.key().rfind(path + "/", 0) == 0) it = sec.erase(it);
    else ++it;
  }
  if (sec.empty()) p.editor.erase(key);
  if (p.editor.empty()) p.editor = nullptr;
}

bool valid_name(const std::string& s) {
  if (s.empty() || s == graph::kCarryNode) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; });
}

// Does `to` reach `from` along existing edges (so from -> to would close a loop)?
bool reaches(const graph::Graph& g, const std::string& start, const std::string& target) {
  std::vector<std::string> stack{start};
  std::set<std::string> seen;
  while (!stack.empty()) {
    std::string n = stack.back();
    stack.pop_back();
    if (n == target) return true;
    if (!seen.insert(n).second) continue;
    for (const graph::Edge& e : g.edges)
      if (e.from.node == n) stack.push_back(e.to.node);
  }
  return false;
}

std::vector<std::string> ports_of(const graph::Node& n) {
  std::unique_ptr<graph::Layer> l = graph::create_layer(n.type);
  return l ? l->input_ports() : std::vector<std::string>{};
}

}  // namespace

std::string parent_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string leaf_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

const graph::Graph* graph_at(const project::Project& p, const std::string& parent) {
  if (parent.empty()) return &p.graph;
  const graph::Node* n = find_node(p, parent);
  return n && n->body ? n->body.get() : nullptr;
}

graph::Graph& graph_at(project::Project& p, const std::string& parent) {
  const graph::Graph* g = graph_at(static_cast<const project::Project&>(p), parent);
  if (!g) throw Error("'" + parent + "' is not a block that holds nodes");
  return const_cast<graph::Graph&>(*g);
}

const graph::Node* find_node(const project::Project& p, const std::string& path) {
  const graph::Graph* g = graph_at(p, parent_of(path));
  return g ? g->find(leaf_of(path)) : nullptr;
}

graph::Node& node_at(project::Project& p, const std::string& path) {
  const graph::Node* n = find_node(p, path);
  if (!n) throw Error("there is no node '" + path + "'");
  return const_cast<graph::Node&>(*n);
}

std::string add_node(project::Project& p, const std::string& type, const std::string& parent, double x, double y) {
  graph::Graph& g = graph_at(p, parent);
  if (!parent.empty() && type == "Input") throw Error("an Input cannot go inside a block: the block's input is its '@in'");
  std::string base = type;
  for (char& c : base) c = char(std::tolower(static_cast<unsigned char>(c)));
  graph::Node node = graph::new_node(type, graph::unique_node_name(g, base));
  if (!parent.empty() && node.type == "Repeat") throw Error("a Repeat cannot go inside another Repeat's block");
  const std::string name = node.name;
  g.nodes.push_back(std::move(node));
  const std::string path = parent.empty() ? name : parent + "/" + name;
  set_position(p, path, x, y);
  return path;
}

void remove_nodes(project::Project& p, const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    if (!find_node(p, path)) continue;  // already gone with its Repeat
    graph::Graph& g = graph_at(p, parent_of(path));
    const std::string leaf = leaf_of(path);
    if (g.output == leaf) throw Error("'" + path + "' is its block's output: pick another output first");
    std::erase_if(g.edges, [&](const graph::Edge& e) { return e.from.node == leaf || e.to.node == leaf; });
    std::erase_if(g.nodes, [&](const graph::Node& n) { return n.name == leaf; });
    erase_editor_entry(p, "positions", path);
    erase_editor_entry(p, "expanded", path);
  }
}

void connect(project::Project& p, const std::string& parent, const graph::Endpoint& from, const graph::Endpoint& to) {
  graph::Graph& g = graph_at(p, parent);
  const bool from_carry = !parent.empty() && from.node == graph::kCarryNode;
  const graph::Node* src = from_carry ? nullptr : g.find(from.node);
  if (!src && !from_carry) throw Error("there is no node '" + from.node + "'");
  if (from.port != "out") throw Error("'" + from.str() + "' is not an output port (outputs are named 'out')");
  const graph::Node* dst = g.find(to.node);
  if (!dst) throw Error("there is no node '" + to.node + "'");
  const std::vector<std::string> ports = ports_of(*dst);
  if (std::find(ports.begin(), ports.end(), to.port) == ports.end())
    throw Error(ports.empty() ? "'" + to.node + "' (" + dst->type + ") takes no input"
                              : "'" + to.node + "' has no input port '" + to.port + "'");
  if (from.node == to.node) throw Error("a node cannot feed itself");
  for (const graph::Edge& e : g.edges)
    if (e.to.node == to.node && e.to.port == to.port)
      throw Error("input '" + to.str() + "' is already fed by '" + e.from.str() + "' (disconnect it first)");
  if (reaches(g, to.node, from.node)) throw Error("connecting '" + from.str() + "' to '" + to.str() + "' would close a cycle");
  g.edges.push_back({from, to});
}

void disconnect(project::Project& p, const std::string& parent, const graph::Endpoint& to) {
  graph::Graph& g = graph_at(p, parent);
  const size_t before = g.edges.size();
  std::erase_if(g.edges, [&](const graph::Edge& e) { return e.to.node == to.node && e.to.port == to.port; });
  if (g.edges.size() == before) throw Error("input '" + to.str() + "' is not connected");
}

void rename_node(project::Project& p, const std::string& path, const std::string& new_name) {
  graph::Node& n = node_at(p, path);
  if (n.name == new_name) return;
  if (!valid_name(new_name)) throw Error("'" + new_name + "' is not a valid name (letters, digits, '_' and '-')");
  const std::string parent = parent_of(path);
  graph::Graph& g = graph_at(p, parent);
  if (g.find(new_name)) throw Error("a node named '" + new_name + "' already exists");
  const std::string old = n.name;
  for (graph::Edge& e : g.edges) {
    if (e.from.node == old) e.from.node = new_name;
    if (e.to.node == old) e.to.node = new_name;
  }
  if (g.output == old) g.output = new_name;
  if (parent.empty() && p.loss.output == old) {
    p.loss.output = new_name;
    p.loss_json["output"] = new_name;
  }
  n.name = new_name;
  // Editor entries of the node (and of a Repeat's insides) move with it.
  const std::string new_path = parent.empty() ? new_name : parent + "/" + new_name;
  for (const char* key : {"positions", "expanded"}) {
    if (!p.editor.is_object() || !p.editor.contains(key)) continue;
    Json moved = Json::object();
    for (auto it = p.editor[key].begin(); it != p.editor[key].end(); ++it) {
      const std::string& k = it.key();
      if (k == path) moved[new_path] = it.value();
      else if (k.rfind(path + "/", 0) == 0) moved[new_path + k.substr(path.size())] = it.value();
      else moved[k] = it.value();
    }
    p.editor[key] = moved;
  }
}

void set_field(project::Project& p, const std::string& path, const std::string& key, const Json& value) {
  graph::Node& n = node_at(p, path);
  if (value.is_null()) n.params.erase(key);
  else n.params[key] = value;
}

void set_param_axes(project::Project& p, const std::string& path, const std::string& param, const std::vector<std::string>& axes) {
  graph::Node& n = node_at(p, path);
  if (axes.empty()) n.param_axes.erase(param);
  else n.param_axes[param] = axes;
}

void set_output_axes(project::Project& p, const std::string& path, const std::vector<std::string>& axes) {
  graph::Node& n = node_at(p, path);
  n.output_axes = axes.empty() ? Json() : Json(axes);
}

std::optional<std::pair<double, double>> position(const project::Project& p, const std::string& path) {
  if (!p.editor.is_object() || !p.editor.contains("positions")) return std::nullopt;
  const Json& sec = p.editor["positions"];
  if (!sec.contains(path)) return std::nullopt;
  const Json& xy = sec[path];
  if (!xy.is_array() || xy.size() != 2 || !xy[0].is_number() || !xy[1].is_number()) return std::nullopt;
  return std::make_pair(xy[0].get<double>(), xy[1].get<double>());
}

void set_position(project::Project& p, const std::string& path, double x, double y) {
  // Whole pixels: the file stays readable and diffs stay small.
  editor_section(p, "positions")[path] = Json::array({std::round(x), std::round(y)});
}

bool expanded(const project::Project& p, const std::string& repeat_path) {
  return p.editor.is_object() && p.editor.contains("expanded") && p.editor["expanded"].value(repeat_path, false);
}

void set_expanded(project::Project& p, const std::string& repeat_path, bool on) {
  if (on) editor_section(p, "expanded")[repeat_path] = true;
  else erase_editor_entry(p, "expanded", repeat_path);
}

Json copy_nodes(const project::Project& p, const std::vector<std::string>& paths) {
  Json clip = {{"format", "shardlab.nodes"}, {"nodes", Json::array()}, {"edges", Json::array()}, {"positions", Json::object()}};
  std::set<std::string> names;
  std::string parent;
  graph::Graph sub;
  for (const std::string& path : paths) {
    const graph::Node* n = find_node(p, path);
    if (!n) continue;
    if (names.empty()) parent = parent_of(path);
    if (parent_of(path) != parent) continue;  // one graph at a time
    names.insert(n->name);
    graph::Node copy = *n;
    if (n->body) copy.body = std::make_shared<graph::Graph>(*n->body);
    sub.nodes.push_back(copy);
    if (auto xy = position(p, path)) clip["positions"][n->name] = Json::array({xy->first, xy->second});
  }
  if (const graph::Graph* g = graph_at(p, parent))
    for (const graph::Edge& e : g->edges)
      if (names.count(e.from.node) && names.count(e.to.node)) sub.edges.push_back(e);
  Json j = project::graph_to_json(sub, false);
  clip["nodes"] = j["nodes"];
  clip["edges"] = j["edges"];
  return clip;
}

std::vector<std::string> paste_nodes(project::Project& p, const Json& clip, const std::string& parent, double dx, double dy) {
  if (!clip.is_object() || clip.value("format", "") != "shardlab.nodes") throw Error("the clipboard holds no Shardlab nodes");
  graph::Graph sub = project::graph_from_json(Json{{"nodes", clip["nodes"]}, {"edges", clip["edges"]}}, "clipboard", false);
  graph::Graph& g = graph_at(p, parent);
  std::map<std::string, std::string> renamed;
  std::vector<std::string> out;
  for (graph::Node& n : sub.nodes) {
    if (!parent.empty() && (n.type == "Input" || n.type == "Repeat")) continue;
    std::string name = g.find(n.name) ? graph::unique_node_name(g, n.name) : n.name;
    renamed[n.name] = name;
    double x = 0, y = 0;
    if (clip["positions"].contains(n.name)) x = clip["positions"][n.name][0].get<double>(), y = clip["positions"][n.name][1].get<double>();
    n.name = name;
    g.nodes.push_back(n);
    const std::string path = parent.empty() ? name : parent + "/" + name;
    set_position(p, path, x + dx, y + dy);
    out.push_back(path);
  }
  for (graph::Edge e : sub.edges) {
    if (!renamed.count(e.from.node) || !renamed.count(e.to.node)) continue;
    e.from.node = renamed[e.from.node];
    e.to.node = renamed[e.to.node];
    g.edges.push_back(e);
  }
  return out;
}

}  // namespace shardlab::ui::edits
