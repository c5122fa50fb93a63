#include "engine/graph/lower.h"

#include <map>
#include <unordered_map>

#include "engine/util/error.h"

namespace shardlab::graph {

int lower_graph(ir::Program& p, const Graph& g, const GraphReport& report, int input,
                const std::function<int(const std::string&)>& param, const std::string& output_node,
                const LowerOptions& opt) {
  if (!report.ok()) throw Error(report.errors.front());
  std::map<std::string, int> out;
  out[kCarryNode] = input;
  std::map<std::string, std::string> source;
  for (const Edge& e : g.edges) source[e.to.str()] = e.from.node;
  // By name once, not by a search per node (a graph of 20,000 nodes took seconds).
  std::unordered_map<std::string, const Node*> by_name;
  for (const Node& n : g.nodes) by_name.emplace(n.name, &n);
  for (const NodeReport& r : report.nodes) {
    const std::string local = r.name.substr(opt.prefix.size());
    std::vector<int> in;
    if (r.type == "Input") in.push_back(input);
    for (const std::string& port : r.layer->input_ports()) in.push_back(out.at(source.at(local + "." + port)));
    LowerContext ctx{p, r.name, opt.training, opt.seed,
                     [&](const std::string& name) { return param(local + "/" + name); }, opt.outputs};
    ctx.compute = r.dtype.value_or(r.layer->compute_dtype().value_or(opt.dtype));
    out[local] = r.layer->lower(ctx, in);
    if (opt.outputs) (*opt.outputs)[r.name] = out[local];
    // An explicit output_axes is a sharding constraint on the node's output.
    const auto found = by_name.find(local);
    const Node* node = found == by_name.end() ? nullptr : found->second;
    if (node && !node->output_axes.is_null()) {
      ir::Value& v = p.values[size_t(out[local])];
      v.axes = r.output.axes;
      v.constrained = true;
    }
  }
  auto it = out.find(output_node);
  if (it == out.end()) throw Error("there is no node '" + output_node + "' to take the output from");
  return it->second;
}

}  // namespace shardlab::graph
