#include "ui/inspector/design_lookup.h"

namespace shardlab::ui::lookup {

namespace {

const graph::NodeReport* findIn(const std::vector<graph::NodeReport>& nodes, const std::string& path) {
  for (const graph::NodeReport& n : nodes) {
    if (n.name == path) return &n;
    // Body reports are named "<repeat>/<node>": only descend into the Repeat on the way.
    if (!n.body.empty() && path.rfind(n.name + "/", 0) == 0)
      if (const graph::NodeReport* r = findIn(n.body, path)) return r;
  }
  return nullptr;
}

// Runs the node's layer on the inputs the check saw; false when it refuses.
bool infer(const graph::Node& node, const graph::NodeReport& r, graph::ArrayInfo* out, std::vector<graph::ParamInfo>* params) {
  std::unique_ptr<graph::Layer> layer = graph::create_layer(node.type);
  if (!layer) return false;
  try {
    layer->configure(node);
    *out = layer->infer(r.inputs, *params);
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

}  // namespace

const graph::NodeReport* report(const api::Design& d, const std::string& path) { return findIn(d.graph.nodes, path); }

std::string nodeError(const api::Design& d, const std::string& path) {
  if (const graph::NodeReport* r = report(d, path); r && !r->error.empty()) return r->error;
  // A problem whose node this is, as the check recorded it (the node, not the sentence, says so).
  for (const Diagnostic* x : api::diagnostics_of_node(d, path))
    if (x->severity == Severity::Error && x->nodes.front() == path) return x->reason;
  // A block that fails as a whole (its output no longer fits its input) reports no node inside it:
  // its nodes show the block's reason, since an edit of theirs is what usually caused it.
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {};
  const std::string block = path.substr(0, slash);
  const std::string e = nodeError(d, block);
  return e.empty() ? std::string() : "block '" + block + "': " + e;
}

const sharding::ArraySharding* array(const api::Design& d, const std::string& name) {
  return d.sharding_ok ? d.sharding.find(name) : nullptr;
}

std::vector<std::string> defaultParamAxes(const graph::Node& node, const graph::NodeReport& r, const std::string& param) {
  graph::Node copy = node;
  if (copy.param_axes.is_object()) copy.param_axes.erase(param);
  copy.output_axes = nullptr;
  graph::ArrayInfo out;
  std::vector<graph::ParamInfo> params;
  if (!infer(copy, r, &out, &params)) return {};
  for (const graph::ParamInfo& p : params)
    if (p.name == param) return p.axes;
  return {};
}

std::vector<std::string> inferredOutputAxes(const graph::Node& node, const graph::NodeReport& r) {
  if (node.output_axes.is_null()) return r.output.axes;
  graph::Node copy = node;
  copy.output_axes = nullptr;
  graph::ArrayInfo out;
  std::vector<graph::ParamInfo> params;
  if (!infer(copy, r, &out, &params)) return {};
  return out.axes;
}

}  // namespace shardlab::ui::lookup
