#include "engine/advisor/search.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "engine/advisor/step_cost.h"
#include "engine/sharding/layout.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/presets.h"
#include "engine/tensor/dtype.h"

namespace shardlab::advisor {

namespace {

// Meshes of up to three axes, sizes >= 2 in non-increasing order, whose product is n.
std::vector<std::vector<int64_t>> factorizations(int64_t n) {
  std::vector<std::vector<int64_t>> out;
  if (n < 2) return out;
  out.push_back({n});
  for (int64_t a = n / 2; a >= 2; --a) {
    if (n % a != 0) continue;
    const int64_t rest = n / a;
    if (rest <= a && rest >= 2) out.push_back({a, rest});
    for (int64_t b = std::min(a, rest / 2); b >= 2; --b)
      if (rest % b == 0 && rest / b >= 2 && rest / b <= b) out.push_back({a, b, rest / b});
  }
  return out;
}

// What the model asks of one searched axis.
struct AxisInfo {
  std::string name;
  int64_t size = 0;        // gcd of every dimension it names
  double param_bytes = 0;  // parameter bytes it indexes
  double flops = 0;        // forward FLOPs of the nodes that use it
};

// The model reduced to what the search needs, grouped by which searched axes a part touches (a bit
// per searched axis), since a layout's split of it depends on nothing else: each local
// instruction's time in the one-device step, the weight updates' apart (a sharded update splits
// them over the batch's axes too), and the parameters' bytes.
struct ModelSummary {
  std::map<uint32_t, double> seconds_by_mask;
  std::map<uint32_t, double> update_seconds_by_mask;
  // Each parameter of the step (a tied one once) in its stored dtype: its gradient is reduced on
  // its own, at its own size's rate, as the step does it.
  std::vector<std::pair<uint32_t, double>> params;
  double fixed_s = 0;  // the fixed costs of the program and its instructions, which no split shrinks
};

// Every array of a node: inputs, output, parameters and arrays made inside it.
std::vector<const std::vector<std::string>*> axes_of(const graph::NodeReport& n) {
  std::vector<const std::vector<std::string>*> out;
  for (const graph::ArrayInfo& a : n.inputs) out.push_back(&a.axes);
  out.push_back(&n.output.axes);
  for (const graph::ParamInfo& p : n.params) out.push_back(&p.axes);
  for (const graph::InnerArray& i : n.inner) out.push_back(&i.array.axes);
  return out;
}

// Walks the model's nodes with each one's weight: a Repeat's block counts once per layer. The
// Repeat's own parameters (stacked over 'layer') are its block's, so a block's nodes add no
// parameters (`params` false).
template <class Fn>
void walk(const std::vector<graph::NodeReport>& nodes, double times, bool params, Fn&& fn) {
  for (const graph::NodeReport& n : nodes) {
    if (n.body.empty()) {
      fn(n, times, params);
      continue;
    }
    int64_t layers = 1;
    for (const graph::ParamInfo& p : n.params) layers = std::max(layers, p.layers);
    graph::NodeReport stacked;  // the stacked parameters
    stacked.name = n.name;
    stacked.params = n.params;
    fn(stacked, 1.0, params);
    walk(n.body, times * double(layers), false, fn);
  }
}

double param_bytes(const graph::NodeReport& n, const graph::ParamInfo& p) {
  const double elements = double(numel(p.shape));
  return elements * double(n.param_dtype ? dtype_size(*n.param_dtype) : 4);
}

}  // namespace

std::string layout_key(const sharding::Mesh& mesh, const sharding::LogicalRules& rules) {
  // Axes of one device split nothing: left out, and the others numbered without them.
  std::string key;
  std::map<std::string, int> position;
  for (const sharding::MeshAxis& a : mesh.axes())
    if (a.size > 1) {
      key += std::to_string(a.size) + "x";
      const int next = int(position.size());
      position[a.name] = next;
    }
  std::vector<std::string> parts;
  std::set<std::string> seen;
  for (const sharding::LogicalRule& r : rules) {
    if (!seen.insert(r.logical).second) continue;  // the first rule for a name is the one that applies
    std::string part = r.logical + ":";
    for (const std::string& m : r.mesh)
      if (position.count(m)) part += std::to_string(position[m]) + "+";
    parts.push_back(part);
  }
  std::sort(parts.begin(), parts.end());
  for (const std::string& p : parts)
    if (p.back() != ':') key += "|" + p;
  return key;
}

std::string describe_splits(const sharding::Mesh& mesh, const sharding::LogicalRules& rules) {
  std::string out;
  std::set<std::string> seen;
  for (const sharding::LogicalRule& r : rules) {
    if (!seen.insert(r.logical).second || r.mesh.empty()) continue;
    int64_t ways = 1;
    std::string over;
    for (const std::string& m : r.mesh) {
      const int i = mesh.axis_index(m);
      if (i >= 0) ways *= mesh.axes()[size_t(i)].size;
      over += (over.empty() ? "" : "+") + m;
    }
    if (ways < 2) continue;
    out += (out.empty() ? "" : ", ") + r.logical + " " + std::to_string(ways) + "-way over " + over;
  }
  return out.empty() ? "nothing split" : out;
}

std::vector<SearchedLayout> search_layouts(const project::Project& p, const graph::GraphReport& report, int64_t devices, const Hardware& hw,
                                           double capacity_per_device, SearchCounts& counts, int max_axes) {
  counts = {};
  const std::vector<std::string> names = sharding::logical_names_of(report);

  // Each logical name's common size, and what it indexes.
  std::map<std::string, AxisInfo> info;
  std::set<std::string> in_params;
  walk(report.nodes, 1.0, true, [&](const graph::NodeReport& n, double times, bool params) {
    std::set<std::string> touched;
    for (const auto* axes : axes_of(n)) touched.insert(axes->begin(), axes->end());
    for (const std::string& a : touched) info[a].flops += n.flops * times;
    auto add_size = [&](const std::vector<std::string>& axes, const Shape& shape) {
      for (size_t d = 0; d < axes.size() && d < shape.size(); ++d) info[axes[d]].size = std::gcd(info[axes[d]].size, shape[d]);
    };
    for (const graph::ArrayInfo& a : n.inputs) add_size(a.axes, a.shape);
    add_size(n.output.axes, n.output.shape);
    for (const graph::InnerArray& i : n.inner) add_size(i.array.axes, i.array.shape);
    for (const graph::ParamInfo& q : n.params) {
      add_size(q.axes, q.shape);
      if (!params || !q.tied.empty()) continue;
      for (const std::string& a : std::set<std::string>(q.axes.begin(), q.axes.end())) {
        info[a].param_bytes += param_bytes(n, q);
        in_params.insert(a);
      }
    }
  });

  // The searched axes: the batch, then the parameter axes that index the most (bytes, then FLOPs).
  // 'layer' is the pipeline's, which the templates cover.
  std::vector<AxisInfo> searched;
  const bool has_batch = info.count("batch") && info["batch"].size > 1;
  if (has_batch) searched.push_back(info["batch"]), searched.back().name = "batch";
  std::vector<AxisInfo> param_axes;
  for (const std::string& n : names)
    if (n != "batch" && n != "layer" && in_params.count(n) && info[n].size > 1) {
      param_axes.push_back(info[n]);
      param_axes.back().name = n;
    }
  std::stable_sort(param_axes.begin(), param_axes.end(), [](const AxisInfo& a, const AxisInfo& b) {
    return a.param_bytes != b.param_bytes ? a.param_bytes > b.param_bytes : a.flops > b.flops;
  });
  if (int(param_axes.size()) > max_axes) param_axes.resize(size_t(max_axes));
  searched.insert(searched.end(), param_axes.begin(), param_axes.end());
  for (const AxisInfo& a : searched) counts.axes.push_back(a.name);
  if (searched.empty() || devices < 2) return {};
  const int batch_index = has_batch ? 0 : -1;

  // The model by the searched axes it touches.
  auto mask_of = [&](const std::vector<std::string>& axes) {
    uint32_t m = 0;
    for (size_t i = 0; i < searched.size(); ++i)
      if (std::find(axes.begin(), axes.end(), searched[i].name) != axes.end()) m |= 1u << i;
    return m;
  };
  const DeviceRates rates = hw.rates_for(int(devices));
  ModelSummary model;
  std::map<std::string, uint32_t> node_mask;
  walk(report.nodes, 1.0, true, [&](const graph::NodeReport& n, double, bool) {
    uint32_t m = 0;
    for (const auto* axes : axes_of(n)) m |= mask_of(*axes);
    node_mask[n.name] |= m;
  });
  const uint32_t every = (1u << searched.size()) - 1;
  const sharding::ShardingReport one = sharding::analyze_sharding(p, report, sharding::Mesh(), {});
  if (!one.plan) return {};  // it does not partition even on one device: the strategies say why
  const ir::Program& prog = one.plan->program;
  for (size_t v = 0; v < prog.values.size(); ++v)
    if (prog.values[v].kind == ir::ValueKind::Param) model.params.push_back({mask_of(prog.values[v].axes), double(prog.bytes(int(v)))});
  model.fixed_s = rates.run_s;
  for (const ir::Instr& ins : prog.instrs) {
    if (!collective_kind(ins.op).empty() || ins.op == ir::Op::Send || ins.op == ir::Op::Recv) continue;
    model.fixed_s += rates.instruction_s;
    const double t = local_instruction_seconds(prog, ins, rates, hw.kind == "cpu");
    if (ins.op == ir::Op::AdamUpdate || ins.op == ir::Op::SgdUpdate) {
      model.update_seconds_by_mask[mask_of(prog.values[size_t(ins.in.at(0))].axes)] += t;
      continue;
    }
    // An instruction of no node (the loss) or of one not found: split as far as any could be.
    const auto found = node_mask.find(ins.node);
    model.seconds_by_mask[found == node_mask.end() || ins.node.empty() ? every : found->second] += t;
  }
  auto reduction_s = [&](double bytes, int64_t group) {
    // The cheaper of reducing a gradient whole or in pieces; its bytes only (fusing can hide latency).
    double best = -1;
    for (const char* kind : {"reduce_scatter", "all_reduce"}) {
      try {
        const CollectiveRate c = hw.collective(kind, int(devices), int(group), false);
        const double t = c.seconds(bytes) - c.latency_s;
        best = best < 0 ? t : std::min(best, t);
      } catch (const std::exception&) {
        // A profile without this kind: the other bounds it.
      }
    }
    return std::max(0.0, best);
  };

  std::vector<std::string> rule_order;
  if (has_batch) rule_order.push_back("batch");
  for (const std::string& n : names)
    if (n != "batch") rule_order.push_back(n);
  // Every distinct list of logical axes an array of the model has.
  std::set<std::vector<std::string>> array_axes;
  walk(report.nodes, 1.0, true, [&](const graph::NodeReport& n, double, bool) {
    for (const auto* axes : axes_of(n))
      if (!axes->empty()) array_axes.insert(*axes);
  });

  std::vector<SearchedLayout> out;
  std::set<std::string> seen;
  for (const std::vector<int64_t>& sizes : factorizations(devices)) {
    ++counts.meshes;
    const int k = int(sizes.size());
    // Each searched axis' choices that divide it: a set of mesh axes (bits) for the batch, no axis
    // or one for a parameter axis.
    std::vector<std::vector<uint32_t>> choices(searched.size());
    int64_t all = 1;
    for (size_t i = 0; i < searched.size(); ++i) {
      const bool batch = int(i) == batch_index;
      const uint32_t limit = batch ? (1u << k) : uint32_t(k + 1);
      all *= int64_t(limit);
      for (uint32_t c = 0; c < limit; ++c) {
        const uint32_t bits = batch ? c : (c == 0 ? 0u : 1u << (c - 1));
        int64_t ways = 1;
        for (int a = 0; a < k; ++a)
          if (bits & (1u << a)) ways *= sizes[size_t(a)];
        if (searched[i].size % ways == 0) choices[i].push_back(bits);
      }
    }
    int64_t allowed = 1;
    for (const auto& c : choices) allowed *= int64_t(c.size());
    counts.assignments += all;
    counts.indivisible += all - allowed;

    std::vector<size_t> at(searched.size(), 0);
    for (int64_t step = 0; step < allowed; ++step) {
      if (step > 0)  // the next assignment, as an odometer
        for (size_t i = 0; i < at.size(); ++i) {
          if (++at[i] < choices[i].size()) break;
          at[i] = 0;
        }
      std::vector<uint32_t> bits(searched.size());
      uint32_t used = 0;
      for (size_t i = 0; i < at.size(); ++i) used |= bits[i] = choices[i][at[i]];
      if (used != (1u << k) - 1) {
        ++counts.idle_axis;
        continue;
      }
      // Two mesh axes that carry the same logical axes are one axis of their product's size, a
      // layout the mesh with fewer axes has.
      bool same_carried = false;
      for (int a = 0; a < k && !same_carried; ++a)
        for (int b = a + 1; b < k && !same_carried; ++b) {
          same_carried = true;
          for (uint32_t m : bits)
            if (bool(m & (1u << a)) != bool(m & (1u << b))) same_carried = false;
        }
      if (same_carried) {
        ++counts.duplicates;
        continue;
      }
      auto split = [&](uint32_t axes_mask) {
        uint32_t mesh_bits = 0;
        for (size_t i = 0; i < searched.size(); ++i)
          if (axes_mask & (1u << i)) mesh_bits |= bits[i];
        int64_t ways = 1;
        for (int a = 0; a < k; ++a)
          if (mesh_bits & (1u << a)) ways *= sizes[size_t(a)];
        return std::pair<int64_t, uint32_t>{ways, mesh_bits};
      };
      const uint32_t batch_bits = batch_index >= 0 ? bits[size_t(batch_index)] : 0u;
      // The batch's mesh axes that do not split a parameter: its gradient is reduced over them, and
      // its update split over them.
      auto rest_of = [&](uint32_t mesh_bits) {
        int64_t rest = 1;
        for (int a = 0; a < k; ++a)
          if ((batch_bits & (1u << a)) && !(mesh_bits & (1u << a))) rest *= sizes[size_t(a)];
        return rest;
      };
      double held = 0, bound = model.fixed_s;
      for (const auto& [mask, bytes] : model.params) {
        const auto [ways, mesh_bits] = split(mask);
        held += bytes / double(ways);
        const int64_t rest = rest_of(mesh_bits);
        if (rest > 1) bound += reduction_s(bytes / double(ways), rest);
      }
      if (held > capacity_per_device) {
        ++counts.too_big;
        continue;
      }
      // Each instruction on this device's share of it: no faster than its one-device time split as
      // far as its axes allow (smaller GEMMs only run slower per FLOP).
      for (const auto& [mask, t] : model.seconds_by_mask) bound += t / double(split(mask).first);
      for (const auto& [mask, t] : model.update_seconds_by_mask) {
        const auto [ways, mesh_bits] = split(mask);
        bound += t / double(ways * rest_of(mesh_bits));
      }

      // Mesh axes named by what they carry, in this order: the batch alone ('data'), the batch and
      // parameters ('fsdp', or 'data' where no axis carries the batch alone), parameters alone ('model').
      std::vector<int> order(static_cast<size_t>(k));
      std::iota(order.begin(), order.end(), 0);
      auto role = [&](int a) {
        const bool b = batch_bits & (1u << a);
        bool params = false;
        for (size_t i = 0; i < searched.size(); ++i)
          if (int(i) != batch_index && (bits[i] & (1u << a))) params = true;
        return b && !params ? 0 : b ? 1 : 2;
      };
      // Within a role, larger axes first, then by what they carry: mesh axes of one size swapped
      // come out in the same order, so such a layout is seen once.
      auto carried = [&](int a) {
        uint32_t c = 0;
        for (size_t i = 0; i < searched.size(); ++i)
          if (bits[i] & (1u << a)) c |= 1u << i;
        return c;
      };
      std::sort(order.begin(), order.end(), [&](int x, int y) {
        if (role(x) != role(y)) return role(x) < role(y);
        if (sizes[size_t(x)] != sizes[size_t(y)]) return sizes[size_t(x)] > sizes[size_t(y)];
        return carried(x) < carried(y);
      });
      int batch_only = 0;
      for (int a = 0; a < k; ++a) batch_only += role(a) == 0;
      std::vector<std::string> axis_name(static_cast<size_t>(k));
      int count[3] = {0, 0, 0};
      for (int a : order) {
        const int r = role(a), n = count[r]++;
        auto numbered = [](const std::string& base, int i) { return i == 1 ? base : base + std::to_string(i); };
        if (r == 0) axis_name[size_t(a)] = numbered("data", n + 1);
        else if (r == 2) axis_name[size_t(a)] = numbered("model", n + 1);
        else if (batch_only == 0 && n == 0) axis_name[size_t(a)] = "data";
        else axis_name[size_t(a)] = numbered("fsdp", batch_only == 0 ? n : n + 1);
      }
      std::vector<sharding::MeshAxis> mesh_axes;
      for (int a : order) mesh_axes.push_back({axis_name[size_t(a)], sizes[size_t(a)]});
      SearchedLayout l{sharding::Mesh(mesh_axes), {}, bound, ""};
      // The batch's rule first, as the strategies write it: where it and a parameter axis name one
      // mesh axis, an array with both splits the batch (rule order decides, as in Flax).
      for (const std::string& n : rule_order) {
        sharding::LogicalRule r{n, {}};
        for (size_t i = 0; i < searched.size(); ++i)
          if (searched[i].name == n)
            for (int a : order)
              if (bits[i] & (1u << a)) r.mesh.push_back(axis_name[size_t(a)]);
        l.rules.push_back(std::move(r));
      }
      // Two assignments that lay out every array of the model alike are one layout (a parameter
      // axis on the batch's mesh axis is dropped from arrays that have both).
      std::string effect = l.mesh.str();
      for (const std::vector<std::string>& axes : array_axes) {
        effect += ";";
        for (const std::vector<std::string>& dim : sharding::logical_to_mesh(axes, l.rules, "").spec.dims) {
          effect += ",";
          for (const std::string& m : dim) effect += m + "+";
        }
      }
      if (!seen.insert(effect).second) {
        ++counts.duplicates;
        continue;
      }
      l.splits = describe_splits(l.mesh, l.rules);
      out.push_back(std::move(l));
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const SearchedLayout& a, const SearchedLayout& b) { return a.bound_s < b.bound_s; });
  return out;
}

}  // namespace shardlab::advisor
