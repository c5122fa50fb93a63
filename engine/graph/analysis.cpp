#include "engine/graph/analysis.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "engine/graph/lower.h"
#include "engine/ir/primitive.h"
#include "engine/util/checked.h"
#include "engine/util/error.h"

namespace shardlab::graph {

const NodeReport* GraphReport::find(const std::string& name) const {
  for (const NodeReport& n : nodes)
    if (n.name == name) return &n;
  return nullptr;
}

std::vector<size_t> topological_order(const Graph& g, std::vector<std::string>* cyclic) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < g.nodes.size(); ++i) index.emplace(g.nodes[i].name, i);
  std::vector<int> indegree(g.nodes.size(), 0);
  std::vector<std::vector<size_t>> next(g.nodes.size());
  for (const Edge& e : g.edges) {
    auto f = index.find(e.from.node), t = index.find(e.to.node);
    if (f == index.end() || t == index.end()) continue;
    next[f->second].push_back(t->second);
    ++indegree[t->second];
  }
  std::vector<size_t> order, ready;
  for (size_t i = g.nodes.size(); i-- > 0;)
    if (indegree[i] == 0) ready.push_back(i);
  while (!ready.empty()) {  // Kahn's algorithm, preferring file order among ready nodes
    size_t n = ready.back();
    ready.pop_back();
    order.push_back(n);
    std::vector<size_t> released;
    for (size_t m : next[n])
      if (--indegree[m] == 0) released.push_back(m);
    for (auto it = released.rbegin(); it != released.rend(); ++it) ready.push_back(*it);
  }
  // The nodes left over are on a cycle or downstream of one; report only those on it (those that
  // reach themselves through other left-over nodes).
  if (cyclic)
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      if (indegree[i] == 0) continue;
      std::vector<char> seen(g.nodes.size(), 0);
      std::vector<size_t> stack(next[i].begin(), next[i].end());
      bool on_cycle = false;
      while (!stack.empty() && !on_cycle) {
        size_t n = stack.back();
        stack.pop_back();
        if (n == i) on_cycle = true;
        else if (indegree[n] > 0 && !seen[n]) {
          seen[n] = 1;
          stack.insert(stack.end(), next[n].begin(), next[n].end());
        }
      }
      if (on_cycle) cyclic->push_back(g.nodes[i].name);
    }
  return order;
}

namespace {

std::string types_list() {
  std::string s;
  for (const std::string& t : layer_types()) s += (s.empty() ? "" : ", ") + t;
  return s;
}

// Forward FLOPs and a lowering check in one: lower the node alone into a scratch program.
double node_flops(const NodeReport& r) {
  ir::Program scratch;
  std::vector<int> in;
  for (const ArrayInfo& a : r.inputs) in.push_back(scratch.add_value("in", a.shape, ir::ValueKind::Input));
  std::map<std::string, int> params;
  for (const ParamInfo& p : r.params) params[p.name] = scratch.add_value(p.name, p.shape, ir::ValueKind::Param);
  LowerContext ctx{scratch, r.name, false, 0, [&](const std::string& n) { return params.at(n); }, nullptr};
  r.layer->lower(ctx, in);
  double f = 0;
  for (const ir::Instr& ins : scratch.instrs) {
    std::vector<Shape> is, os;
    for (int v : ins.in) is.push_back(scratch.shape(v));
    for (int v : ins.out) os.push_back(scratch.shape(v));
    f += ir::primitive(ins.op).flops(is, os, ins.attrs);
  }
  return f;
}

// Shapes come from the project (features, shapes, the batch size, repeat counts): each array's
// element count must fit the int64 arithmetic the plan, the partitioner and the kernels do on it,
// with room for sums of many arrays and their sizes in bytes. 2^48 elements is 1 PiB of float32.
constexpr int64_t kMaxElements = int64_t(1) << 48;

int64_t checked_elements(const Shape& s, const std::string& what) {
  const auto n = util::product(s);
  if (!n || *n > kMaxElements)
    throw Error(what + " " + shape_str(s) + " has more than 2^48 elements" +
                (n ? " (" + std::to_string(*n) + ")" : std::string(" (its element count overflows 64 bits)")));
  return *n;
}

}  // namespace

namespace {

// A node's "precision": {"dtype": ..., "param_dtype": ...}, each a float dtype.
void read_precision(const Node& n, NodeReport& r) {
  if (n.precision.is_null()) return;
  if (!n.precision.is_object()) throw Error("precision: expected an object of dtype and param_dtype, got " + n.precision.dump());
  for (auto it = n.precision.begin(); it != n.precision.end(); ++it) {
    if (it.key() != "dtype" && it.key() != "param_dtype")
      throw Error("precision." + it.key() + ": unknown field (expected dtype or param_dtype)");
    const std::optional<DType> d = it->is_string() ? parse_float_dtype(it->get<std::string>()) : std::nullopt;
    if (!d) throw Error("precision." + it.key() + ": bad value " + it->dump() + " (expected one of " + float_dtype_names() + ")");
    (it.key() == "dtype" ? r.dtype : r.param_dtype) = d;
  }
}

}  // namespace

GraphReport analyze(const Graph& g, int64_t batch, const ArrayInfo* carry, const std::string& prefix) {
  GraphReport rep;
  std::map<std::string, std::string> own_error;  // node -> its first error, for the editor to show on it
  auto fail = [&](const std::string& node, const std::string& msg) {
    rep.errors.push_back(node.empty() ? msg : "node '" + prefix + node + "': " + msg);
    Diagnostic d;
    d.code = node.empty() ? "graph.structure" : "graph.node";
    d.field = "graph";
    if (!node.empty()) d.nodes.push_back(prefix + node);
    d.message = rep.errors.back();
    d.reason = msg;
    rep.problems.push_back(std::move(d));
    if (!node.empty()) own_error.emplace(node, msg);
  };

  std::map<std::string, std::shared_ptr<Layer>> layers;
  int inputs = 0;
  for (const Node& n : g.nodes) {
    if (n.name.empty() || n.name == kCarryNode || n.name.find_first_of("/.") != std::string::npos) {
      fail("", "a node has the invalid name '" + n.name + "' (names must be non-empty, without '/' or '.')");
      continue;
    }
    if (layers.count(n.name)) {
      fail(n.name, "the name is used by two nodes");
      continue;
    }
    std::shared_ptr<Layer> layer = create_layer(n.type);
    if (!layer) {
      fail(n.name, "unknown layer type '" + n.type + "' (expected one of " + types_list() + ")");
      layers[n.name] = nullptr;
      continue;
    }
    try {
      layer->configure(n);
    } catch (const Error& e) {
      fail(n.name, e.what());
      layer = nullptr;
    }
    if (n.type == "Input") ++inputs;
    layers[n.name] = layer;
  }
  if (!carry && inputs != 1) fail("", "the graph needs exactly one Input node, found " + std::to_string(inputs));
  if (carry && inputs != 0) fail("", "a Repeat block cannot contain an Input node (its input is '@in')");

  // Wiring: every edge names existing ports; every input port gets exactly one edge.
  std::map<std::string, std::string> source;  // "node.port" -> producing node
  for (const Edge& e : g.edges) {
    const std::string what = "edge " + e.from.str() + " -> " + e.to.str();
    bool from_carry = carry && e.from.node == kCarryNode;
    if (!from_carry && !layers.count(e.from.node)) { fail("", "dangling " + what + ": there is no node '" + e.from.node + "'"); continue; }
    if (e.from.port != "out") { fail("", "dangling " + what + ": node '" + e.from.node + "' has no output port '" + e.from.port + "' (its output is 'out')"); continue; }
    auto to = layers.find(e.to.node);
    if (to == layers.end()) { fail("", "dangling " + what + ": there is no node '" + e.to.node + "'"); continue; }
    if (to->second) {
      auto ports = to->second->input_ports();
      if (std::find(ports.begin(), ports.end(), e.to.port) == ports.end()) {
        std::string list;
        for (auto& p : ports) list += (list.empty() ? "" : ", ") + p;
        fail("", "dangling " + what + ": node '" + e.to.node + "' has no input port '" + e.to.port + "' (ports: " +
                     (list.empty() ? "none" : list) + ")");
        continue;
      }
    }
    if (!source.emplace(e.to.str(), e.from.node).second) fail(e.to.node, "input '" + e.to.port + "' has more than one edge");
  }
  for (const Node& n : g.nodes) {
    auto it = layers.find(n.name);
    if (it == layers.end() || !it->second) continue;
    for (const std::string& port : it->second->input_ports())
      if (!source.count(n.name + "." + port)) fail(n.name, "missing input: port '" + port + "' is not connected");
  }

  std::vector<std::string> cyclic;
  std::vector<size_t> order = topological_order(g, &cyclic);
  if (!cyclic.empty()) {
    std::string list;
    for (auto& c : cyclic) list += (list.empty() ? "" : ", ") + prefix + c;
    fail("", "the graph has a cycle through nodes " + list);
    rep.problems.back().code = "graph.cycle";
    for (auto& c : cyclic) rep.problems.back().nodes.push_back(prefix + c);
    for (auto& c : cyclic) own_error.emplace(c, "on a cycle through " + list);
  }
  // Every node gets a report, so an editor can draw each one: those that could not be inferred
  // carry their own error, or none when they only wait on an upstream node that failed.
  auto unresolved = [&](const Node& n) {
    NodeReport r;
    r.name = prefix + n.name;
    r.type = n.type;
    auto e = own_error.find(n.name);
    if (e != own_error.end()) r.error = e->second;
    return r;
  };

  std::map<std::string, ArrayInfo> outputs;
  if (carry) outputs[kCarryNode] = *carry;
  for (size_t idx : order) {
    const Node& n = g.nodes[idx];
    NodeReport r;
    r.name = prefix + n.name;
    r.type = n.type;
    auto lit = layers.find(n.name);
    if (lit == layers.end() || !lit->second) {
      if (lit != layers.end()) rep.nodes.push_back(unresolved(n));
      continue;
    }
    r.layer = lit->second;
    bool inputs_ok = true;
    if (n.type == "Input") r.inputs.push_back(ArrayInfo{{batch}, {"batch"}});
    for (const std::string& port : r.layer->input_ports()) {
      auto s = source.find(n.name + "." + port);
      auto o = s == source.end() ? outputs.end() : outputs.find(s->second);
      if (o == outputs.end()) { inputs_ok = false; break; }
      r.inputs.push_back(o->second);
    }
    if (!inputs_ok) {  // an upstream error is already reported
      rep.nodes.push_back(unresolved(n));
      continue;
    }
    try {
      read_precision(n, r);
      // A shared parameter is the earlier node's: its shape, axes and initializer.
      for (const TiedParam& t : r.layer->tied_params()) {
        const std::string node = t.target.substr(0, t.target.rfind('/')), pname = t.target.substr(t.target.rfind('/') + 1);
        if (carry) throw Error(t.field + ": a Repeat block cannot share a parameter with '" + node + "'; place this node after the block");
        const NodeReport* source = rep.find(node);
        if (!source)
          throw Error(t.field + ": there is no node '" + node + "' before this one (it must feed, directly or not, the layers before this node)");
        const auto found = std::find_if(source->params.begin(), source->params.end(), [&](const ParamInfo& q) { return q.name == pname; });
        if (found == source->params.end() || !found->tied.empty())
          throw Error(t.field + ": node '" + node + "' (" + source->type + ") has no parameter '" + pname + "' of its own" +
                      (source->error.empty() ? "" : " (it has errors)"));
        if (n.param_axes.is_object() && n.param_axes.contains(t.name))
          throw Error("param_axes." + t.name + ": a shared parameter keeps the axes of its own node; set them on '" + node + "'");
        ParamInfo shared = *found;
        shared.name = t.name;
        shared.tied = t.target;
        r.params.push_back(std::move(shared));
      }
      r.output = r.layer->infer(r.inputs, r.params);
      r.inner = r.layer->inner_arrays(r.inputs);
      checked_elements(r.output.shape, n.type == "Input" ? "output (batch_size x shape)" : "output");
      if (!n.output_axes.is_null()) {
        auto axes = fields::names(n.output_axes, "output_axes");
        if (axes.size() != r.output.shape.size())
          throw Error("output_axes: " + std::to_string(axes.size()) + " names for an output of rank " +
                      std::to_string(r.output.shape.size()) + " " + shape_str(r.output.shape));
        r.output.axes = axes;
      }
      // An override for a parameter the layer does not have (a misspelt name) would be ignored.
      if (n.param_axes.is_object())
        for (auto it = n.param_axes.begin(); it != n.param_axes.end(); ++it)
          if (std::none_of(r.params.begin(), r.params.end(), [&](const ParamInfo& p) { return p.name == it.key(); })) {
            std::string list;
            for (const ParamInfo& p : r.params) list += (list.empty() ? "" : ", ") + p.name;
            throw Error("param_axes." + it.key() + ": the layer has no parameter '" + it.key() + "' (its parameters: " +
                        (list.empty() ? "none" : list) + ")");
          }
      for (const ParamInfo& p : r.params)
        if (p.tied.empty()) r.param_count = util::add_or_throw(r.param_count, checked_elements(p.shape, "parameter '" + p.name + "'"), "parameter count");
      if (n.body) r.body = analyze(*n.body, batch, &r.inputs.at(0), r.name + "/").nodes;
      r.flops = node_flops(r);
    } catch (const Error& e) {
      // A block's inner error also shows on the inner node that has it.
      if (n.body && r.body.empty() && !r.inputs.empty()) r.body = analyze(*n.body, batch, &r.inputs.at(0), r.name + "/").nodes;
      r.error = e.what();
      fail(n.name, e.what());
      // The block's nodes that fail are at fault too: the editor marks them inside the block.
      std::function<void(const std::vector<NodeReport>&)> inner = [&](const std::vector<NodeReport>& body) {
        for (const NodeReport& b : body) {
          if (!b.error.empty()) rep.problems.back().nodes.push_back(b.name);
          inner(b.body);
        }
      };
      inner(r.body);
      rep.nodes.push_back(std::move(r));
      continue;
    }
    outputs[n.name] = r.output;
    rep.nodes.push_back(std::move(r));
  }
  std::set<size_t> placed(order.begin(), order.end());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!placed.count(i) && layers.count(g.nodes[i].name)) rep.nodes.push_back(unresolved(g.nodes[i]));
  return rep;
}

}  // namespace shardlab::graph
