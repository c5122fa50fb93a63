// The edits a person makes to a project's graph, as plain functions on a Project: add, remove,
// connect, disconnect, rename, set a field or axis names, place nodes, copy and paste. The document
// wraps each in one undo command; they throw shardlab::Error with a reason a user can read when an
// edit is refused (a port already fed, a cycle, a name taken), and then leave the project as it was.
//
// Nodes are addressed by path: "dense1" at the top, "blocks/W1" inside the Repeat "blocks".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engine/api/engine.h"

namespace shardlab::ui::edits {

using graph::Json;

// The graph a path's node lives in ("" or a Repeat's path for its body), and the node itself.
graph::Graph& graph_at(project::Project& p, const std::string& parent);
const graph::Graph* graph_at(const project::Project& p, const std::string& parent);
graph::Node& node_at(project::Project& p, const std::string& path);
const graph::Node* find_node(const project::Project& p, const std::string& path);
std::string parent_of(const std::string& path);  // "blocks/W1" -> "blocks"; "dense1" -> ""
std::string leaf_of(const std::string& path);    // "blocks/W1" -> "W1"

// Adds a node of `type` to the graph at `parent`; returns its path.
std::string add_node(project::Project& p, const std::string& type, const std::string& parent, double x, double y);
// Removes the nodes and every edge touching them (and their positions).
void remove_nodes(project::Project& p, const std::vector<std::string>& paths);
// Connects an output port to an input port in the same graph. Refused, with the reason: unknown
// node or port, a node to itself, an input already fed, or an edge that would close a cycle.
void connect(project::Project& p, const std::string& parent, const graph::Endpoint& from, const graph::Endpoint& to);
void disconnect(project::Project& p, const std::string& parent, const graph::Endpoint& to);
void rename_node(project::Project& p, const std::string& path, const std::string& new_name);
// A field of the node's params; null removes it (back to the default).
void set_field(project::Project& p, const std::string& path, const std::string& key, const Json& value);
// The logical axis names of a parameter (empty: back to the layer's default) and of the output
// (empty: inferred).
void set_param_axes(project::Project& p, const std::string& path, const std::string& param, const std::vector<std::string>& axes);
void set_output_axes(project::Project& p, const std::string& path, const std::vector<std::string>& axes);

// Editor positions, kept in the project's "editor" section.
std::optional<std::pair<double, double>> position(const project::Project& p, const std::string& path);
void set_position(project::Project& p, const std::string& path, double x, double y);
bool expanded(const project::Project& p, const std::string& repeat_path);
void set_expanded(project::Project& p, const std::string& repeat_path, bool on);

// Copy: the nodes (same graph), the edges among them and their positions, as JSON.
Json copy_nodes(const project::Project& p, const std::vector<std::string>& paths);
// Paste into the graph at `parent`, renaming on clashes and shifting by (dx, dy); returns the new paths.
std::vector<std::string> paste_nodes(project::Project& p, const Json& clip, const std::string& parent, double dx, double dy);

}  // namespace shardlab::ui::edits
