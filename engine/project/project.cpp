#include "engine/project/project.h"

#include "engine/checkpoint/regular_file.h"
#include "engine/project/limits.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/mesh.h"
#include "engine/util/output_file.h"
#include "engine/util/error.h"
#include "engine/util/json_limits.h"
#include "engine/util/strings.h"

namespace shardlab::project {

using graph::Json;

namespace {

// `where` and a field below it: "FILE: loss" after a file name ("FILE:"), "graph.nodes" otherwise.
std::string field_path(const std::string& where, const std::string& key) {
  return where + (!where.empty() && where.back() == ':' ? " " : ".") + key;
}

void only(const Json& j, const std::string& where, std::initializer_list<const char*> keys) {
  if (!j.is_object()) throw Error(where + ": expected an object, got " + j.dump());
  for (auto it = j.begin(); it != j.end(); ++it)
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; })) {
      std::string list;
      for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
      throw Error(field_path(where, it.key()) + ": unknown field (expected one of " + list + ")");
    }
}

const Json& require(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) throw Error(field_path(where, key) + ": missing");
  return j[key];
}

std::string str(const Json& j, const std::string& where) {
  if (!j.is_string()) throw Error(where + ": expected a string, got " + j.dump());
  return j.get<std::string>();
}

graph::Endpoint endpoint(const Json& j, const std::string& where) {
  std::string s = str(j, where);
  size_t dot = s.rfind('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == s.size())
    throw Error(where + ": '" + s + "' is not a port (expected \"node.port\", e.g. \"dense1.out\")");
  return {s.substr(0, dot), s.substr(dot + 1)};
}

graph::Graph parse_graph(const Json& j, const std::string& where, bool body) {
  if (body) only(j, where, {"nodes", "edges", "output"});
  else only(j, where, {"nodes", "edges"});
  graph::Graph g;
  const Json& nodes = require(j, "nodes", where);
  if (!nodes.is_array()) throw Error(where + ".nodes: expected a list");
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Json& n = nodes[i];
    std::string at = where + ".nodes[" + std::to_string(i) + "]";
    if (n.is_object() && n.contains("name") && n["name"].is_string()) at = where + ": node '" + n["name"].get<std::string>() + "'";
    only(n, at, {"name", "type", "params", "param_axes", "output_axes", "precision", "body"});
    graph::Node node;
    node.name = str(require(n, "name", at), at + ".name");
    node.type = str(require(n, "type", at), at + ".type");
    if (n.contains("params")) {
      if (!n["params"].is_object()) throw Error(at + ".params: expected an object");
      node.params = n["params"];
    }
    if (n.contains("param_axes")) {
      if (!n["param_axes"].is_object()) throw Error(at + ".param_axes: expected an object of name lists");
      node.param_axes = n["param_axes"];
    }
    if (n.contains("output_axes")) node.output_axes = n["output_axes"];
    if (n.contains("precision")) node.precision = n["precision"];
    if (n.contains("body")) node.body = std::make_shared<graph::Graph>(parse_graph(n["body"], at + ".body", true));
    g.nodes.push_back(std::move(node));
  }
  if (j.contains("edges")) {
    const Json& edges = j["edges"];
    if (!edges.is_array()) throw Error(where + ".edges: expected a list");
    for (size_t i = 0; i < edges.size(); ++i) {
      std::string at = where + ".edges[" + std::to_string(i) + "]";
      only(edges[i], at, {"from", "to"});
      g.edges.push_back({endpoint(require(edges[i], "from", at), at + ".from"), endpoint(require(edges[i], "to", at), at + ".to")});
    }
  }
  if (body) g.output = str(require(j, "output", where), where + ".output");
  return g;
}

}  // namespace

Json graph_to_json(const graph::Graph& g, bool body) {
  Json nodes = Json::array();
  for (const graph::Node& n : g.nodes) {
    Json o = Json::object();
    o["name"] = n.name;
    o["type"] = n.type;
    if (!n.params.empty()) o["params"] = n.params;
    if (!n.param_axes.empty()) o["param_axes"] = n.param_axes;
    if (!n.output_axes.is_null()) o["output_axes"] = n.output_axes;
    if (!n.precision.is_null()) o["precision"] = n.precision;
    if (n.body) o["body"] = graph_to_json(*n.body, true);
    nodes.push_back(o);
  }
  Json edges = Json::array();
  for (const graph::Edge& e : g.edges) edges.push_back(Json{{"from", e.from.str()}, {"to", e.to.str()}});
  Json out = Json::object();
  out["nodes"] = nodes;
  out["edges"] = edges;
  if (body) out["output"] = g.output;
  return out;
}

graph::Graph graph_from_json(const Json& j, const std::string& where, bool body) { return parse_graph(j, where, body); }

namespace {

LossSpec parse_loss(const Json& j, const std::string& where) {
  only(j, where, {"type", "output"});
  LossSpec l;
  l.type = str(require(j, "type", where), where + ".type");
  if (l.type != "softmax_cross_entropy" && l.type != "mean_squared_error")
    throw Error(where + ".type: unknown loss '" + l.type + "' (expected softmax_cross_entropy or mean_squared_error)");
  l.output = str(require(j, "output", where), where + ".output");
  return l;
}

// Field `k` of `j` as an integer of at least `lo`, or `fallback` when absent; errors name `where.k`.
int64_t optional_integer(const Json& j, const std::string& where, const char* k, int64_t fallback, int64_t lo) {
  if (!j.contains(k)) return fallback;
  if (!j[k].is_number_integer() || j[k].get<int64_t>() < lo)
    throw Error(where + "." + k + ": bad value " + j[k].dump() + " (expected an integer >= " + std::to_string(lo) + ")");
  return j[k].get<int64_t>();
}

CheckpointSpec parse_checkpoint(const Json& j, const std::string& where) {
  only(j, where, {"dir", "save_every", "keep"});
  CheckpointSpec c;
  const Json& dir = require(j, "dir", where);
  if (!dir.is_string() || dir.get<std::string>().empty())
    throw Error(where + ".dir: bad value " + dir.dump() + " (expected a folder name, e.g. \"checkpoints\")");
  c.dir = dir.get<std::string>();
  auto integer = [&](const char* k, int64_t fallback, int64_t lo) { return optional_integer(j, where, k, fallback, lo); };
  c.save_every = integer("save_every", 0, 0);
  c.keep = integer("keep", 3, 1);
  return c;
}

TrainingSpec parse_training(const Json& j, const std::string& where) {
  only(j, where, {"batch_size", "accumulate", "pipeline_schedule", "epochs", "steps", "seed", "shuffle", "prefetch", "eval", "checkpoint"});
  TrainingSpec t;
  auto integer = [&](const char* k, int64_t fallback, int64_t lo) { return optional_integer(j, where, k, fallback, lo); };
  auto boolean = [&](const char* k, bool fallback) {
    if (!j.contains(k)) return fallback;
    if (!j[k].is_boolean()) throw Error(where + "." + k + ": bad value " + j[k].dump() + " (expected true or false)");
    return j[k].get<bool>();
  };
  t.batch_size = integer("batch_size", 32, 1);
  t.epochs = integer("epochs", 1, 0);
  t.steps = integer("steps", 0, 0);
  t.seed = uint64_t(integer("seed", 0, 0));
  t.shuffle = boolean("shuffle", true);
  t.prefetch = integer("prefetch", 2, 0);
  t.accumulate = integer("accumulate", 1, 1);
  if (t.batch_size % t.accumulate != 0)
    throw Error(where + ".accumulate: " + std::to_string(t.accumulate) + " microbatches do not divide batch_size " +
                std::to_string(t.batch_size) + " (each microbatch must have the same number of examples)");
  if (j.contains("pipeline_schedule")) {
    const Json& ps = j["pipeline_schedule"];
    if (!ps.is_string() || (ps.get<std::string>() != "gpipe" && ps.get<std::string>() != "1f1b"))
      throw Error(where + ".pipeline_schedule: bad value " + ps.dump() + " (expected \"gpipe\" or \"1f1b\")");
    t.pipeline_schedule = ps.get<std::string>();
  }
  t.eval = boolean("eval", true);
  if (t.steps == 0 && t.epochs == 0) throw Error(where + ": set steps or epochs above 0");
  if (j.contains("checkpoint")) t.checkpoint = parse_checkpoint(j["checkpoint"], where + ".checkpoint");
  return t;
}

// nlohmann reports a byte offset; users want line and column.
std::string line_col(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i + 1 < byte && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

constexpr size_t kMaxProjectDepth = 256;
// A limit far beyond any real project (README, "Projects"): the nodes of the graph, Repeat bodies
// included; strings are bounded by kMaxProjectString (limits.h).
constexpr size_t kMaxProjectNodes = 100000;

// Nodes of a graph's JSON, its Repeat bodies' too (each graph's "nodes" array, however deep).
size_t count_nodes(const Json& graph) {
  if (!graph.is_object() || !graph.contains("nodes") || !graph["nodes"].is_array()) return 0;
  size_t n = graph["nodes"].size();
  for (const Json& node : graph["nodes"])
    if (node.is_object() && node.contains("body")) n += count_nodes(node["body"]);
  return n;
}
// Projects are a few kilobytes (a large graph, tens); this is far beyond any.
constexpr uint64_t kMaxProjectBytes = uint64_t(64) << 20;

}  // namespace

Project parse_project(const std::string& text, const std::string& filename, Validation v) {
  // Before parsing: the parser recurses once per level, and 100,000 nested arrays overflow the
  // stack. Real projects nest about 3 levels per Repeat inside a Repeat, so 256 is far beyond them.
  Json j;
  try {
    j = util::parse_json_limited(text, filename, kMaxProjectDepth, {}, kMaxProjectString);
  } catch (const util::JsonSyntaxError& e) {
    // reason: "parse error at line 4, column 11: syntax error while parsing value - invalid literal;
    // last read: '...'"; keep the reason after the position, which line_col gives from the byte.
    std::string why = e.reason;
    size_t pos = why.find(", column ");
    if (pos != std::string::npos) pos = why.find(": ", pos);
    if (pos == std::string::npos) throw Error(filename + ": malformed JSON: " + util::excerpt(why, 160));
    throw Error(filename + ": malformed JSON at " + line_col(text, e.byte) + ": " + util::excerpt(why.substr(pos + 2), 160));
  }
  const std::string where = filename + ":";
  // The format first: another program's JSON is "not a project", not a list of unknown fields.
  if (!j.is_object() || !j.contains("format") || j["format"] != kFormatName)
    throw Error(filename + ": format: not a Shardlab project (expected \"format\": \"" + kFormatName + "\")");
  if (!j.contains("version") || !j["version"].is_number_integer())
    throw Error(filename + ": version: missing (expected " + std::to_string(kFormatVersion) + ")");
  if (j["version"] != kFormatVersion)
    throw Error(filename + ": version: format version " + j["version"].dump() + " is not readable by this build (reads " +
                std::to_string(kFormatVersion) + ")");
  only(j, where, {"format", "version", "name", "description", "graph", "loss", "optimizer", "data", "training", "precision",
                  "mesh", "logical_axis_rules", "constraint_fallback", "editor"});
  if (j.contains("graph"))
    if (const size_t n = count_nodes(j["graph"]); n > kMaxProjectNodes)
      throw Error(filename + ": graph: " + std::to_string(n) + " nodes (at most " + std::to_string(kMaxProjectNodes) + ")");
  Project p;
  p.name = j.contains("name") ? str(j["name"], filename + ": name") : "";
  p.description = j.contains("description") ? str(j["description"], filename + ": description") : "";
  p.graph = parse_graph(require(j, "graph", filename + ":"), filename + ": graph", false);
  p.loss_json = require(j, "loss", filename + ":");
  p.loss = parse_loss(p.loss_json, filename + ": loss");
  p.optimizer_json = require(j, "optimizer", filename + ":");
  p.optimizer = parse_optimizer(p.optimizer_json, filename + ": optimizer");
  p.data_json = require(j, "data", filename + ":");
  p.data = data::parse_data_spec(p.data_json, filename + ": data");
  p.training_json = j.contains("training") ? j["training"] : Json::object();
  p.training = parse_training(p.training_json, filename + ": training");
  if (j.contains("precision")) p.precision_json = j["precision"];
  p.precision = parse_precision(p.precision_json, filename + ": precision");
  if (j.contains("mesh")) p.mesh = j["mesh"];
  if (j.contains("logical_axis_rules")) p.logical_axis_rules = j["logical_axis_rules"];
  if (j.contains("constraint_fallback")) {
    p.constraint_fallback = str(j["constraint_fallback"], filename + ": constraint_fallback");
    sharding::parse_fallback(p.constraint_fallback, filename + ": constraint_fallback");
  }
  sharding::mesh_from_json(p.mesh, filename + ": mesh");
  sharding::rules_from_json(p.logical_axis_rules, filename + ": logical_axis_rules");
  if (j.contains("editor")) {
    if (!j["editor"].is_object()) throw Error(filename + ": editor: expected an object");
    p.editor = j["editor"];
  }
  if (v == Validation::Structure) return p;

  graph::GraphReport report = analyze_project(p);
  if (!report.ok()) {
    std::string all;
    for (const std::string& e : report.errors) all += (all.empty() ? "" : "\n") + filename + ": " + e;
    throw Error(all);
  }
  if (p.loss.output.empty()) throw Error(filename + ": loss.output: not set: name the node whose output the loss reads");
  if (!p.graph.find(p.loss.output))
    throw Error(filename + ": loss.output: there is no node '" + p.loss.output + "'");
  return p;
}

Project load_project(const std::filesystem::path& file, Validation v) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) throw Error(file.string() + ": cannot open the project file (no such file)");
  // A regular file of sane size: a FIFO would block here, a device or a huge file never end.
  Project p = parse_project(checkpoint::read_small_file(file, kMaxProjectBytes), file.string(), v);
  p.file = file;
  return p;
}

Project blank_project() {
  static const char* const kBlank = R"({
    "format": "shardlab.project", "version": 1,
    "graph": {"nodes": [], "edges": []},
    "loss": {"type": "mean_squared_error", "output": ""},
    "optimizer": {"type": "adam", "learning_rate": 0.001},
    "data": {"type": "synthetic", "kind": "normal", "feature_shape": [16], "target_shape": [4], "examples": 256},
    "training": {"batch_size": 32, "steps": 100}
  })";
  return parse_project(kBlank, "untitled", Validation::Structure);
}

std::string to_json_string(const Project& p) {
  Json j = Json::object();
  j["format"] = kFormatName;
  j["version"] = kFormatVersion;
  if (!p.name.empty()) j["name"] = p.name;
  if (!p.description.empty()) j["description"] = p.description;
  j["graph"] = graph_to_json(p.graph, false);
  j["loss"] = p.loss_json;
  j["optimizer"] = p.optimizer_json;
  j["data"] = p.data_json;
  j["training"] = p.training_json;
  if (!p.precision_json.is_null()) j["precision"] = p.precision_json;
  if (!p.mesh.is_null()) j["mesh"] = p.mesh;
  if (!p.logical_axis_rules.empty()) j["logical_axis_rules"] = p.logical_axis_rules;
  if (!p.constraint_fallback.empty()) j["constraint_fallback"] = p.constraint_fallback;
  if (!p.editor.is_null()) j["editor"] = p.editor;
  return j.dump(2) + "\n";
}

void save_project(const Project& p, const std::filesystem::path& file) {
  util::write_output_file(file, to_json_string(p), "project");
}

std::filesystem::path checkpoint_dir(const Project& p) {
  if (!p.training.checkpoint) return {};
  const std::filesystem::path dir(p.training.checkpoint->dir);
  if (dir.is_absolute() || p.file.empty()) return dir.lexically_normal();
  return (p.file.parent_path() / dir).lexically_normal();
}

graph::GraphReport analyze_project(const Project& p) { return graph::analyze(p.graph, p.training.batch_size); }

}  // namespace shardlab::project
