#include "engine/advisor/advisor.h"

#include <algorithm>
#include <numeric>

#include "engine/sharding/layout.h"
#include "engine/sharding/presets.h"
#include "engine/util/error.h"

namespace shardlab::advisor {

namespace {

struct Layout {
  std::string strategy;
  sharding::Mesh mesh;
  sharding::LogicalRules rules;
  int64_t microbatches = 0;  // a pipeline's (0: the project's training.accumulate)
};

// Microbatches for S stages beside d-way data parallelism: the most of 4S, 2S and S that splits the
// batch evenly over microbatches and data (a bubble of at most (S-1)/(5S-1), under 20%), or 0.
int64_t pipeline_microbatches(int64_t batch, int64_t stages, int64_t data) {
  for (int64_t m : {4 * stages, 2 * stages, stages})
    if (batch % m == 0 && (batch / m) % data == 0) return m;
  return 0;
}

// Sets `logical`'s rule to `axes` (the first rule for it; appended when there is none).
void set_rule(sharding::LogicalRules& rules, const std::string& logical, std::vector<std::string> axes) {
  for (sharding::LogicalRule& r : rules)
    if (r.logical == logical) {
      r.mesh = std::move(axes);
      return;
    }
  rules.push_back({logical, std::move(axes)});
}

// The greatest common divisor of every dimension of the model's arrays (parameters, outputs and
// arrays made inside layers) named one of `names`: a mesh axis splits them all only where its size
// divides it. 0 where none is named.
int64_t common_size(const graph::GraphReport& report, const std::vector<std::string>& names) {
  int64_t g = 0;
  auto add = [&](const graph::ArrayInfo& a) {
    for (size_t d = 0; d < a.axes.size() && d < a.shape.size(); ++d)
      if (std::find(names.begin(), names.end(), a.axes[d]) != names.end()) g = std::gcd(g, a.shape[d]);
  };
  auto walk = [&](const std::vector<graph::NodeReport>& nodes, auto&& self) -> void {
    for (const graph::NodeReport& n : nodes) {
      for (const graph::ParamInfo& info : n.params) add({info.shape, info.axes});
      add(n.output);
      for (const graph::InnerArray& inner : n.inner) add(inner.array);
      self(n.body, self);
    }
  };
  walk(report.nodes, walk);
  return g;
}

// Whether every mesh axis of more than one device splits something: a rule maps one of the model's
// names to it. A layout with an idle axis only repeats the same work on it (the 2-D rules on
// a model without 'hidden' are data parallel on fewer devices), so the advisor does not offer it.
bool splits_on_every_axis(const Layout& l, const std::vector<std::string>& names) {
  for (const auto& [axis, size] : l.mesh.axes()) {
    if (size < 2) continue;
    const bool used = std::any_of(l.rules.begin(), l.rules.end(), [&](const sharding::LogicalRule& r) {
      return std::find(names.begin(), names.end(), r.logical) != names.end() &&
             std::find(r.mesh.begin(), r.mesh.end(), axis) != r.mesh.end();
    });
    if (!used) return false;
  }
  return true;
}

// The strategies, each on every mesh it can use: data parallel and FSDP on data=N; Megatron and
// the 2-D rules on data=d x model=m for every d * m = N with m >= 2; FSDP combined with Megatron
// on the same meshes with d >= 2; hybrid FSDP (replicas of FSDP groups: batch over data and fsdp,
// parameters over fsdp) on data x fsdp; and all three on data x fsdp x model.
std::vector<Layout> layouts(const project::Project& p, const graph::GraphReport& report, const std::vector<std::string>& names,
                           int64_t n) {
  std::vector<Layout> out;
  auto with_preset = [&](const std::string& strategy, const std::string& preset, sharding::Mesh mesh) {
    project::Project q = p;
    q.mesh = sharding::mesh_to_json(mesh);
    sharding::apply_preset(preset, names, q);
    out.push_back({strategy, sharding::project_mesh(q), sharding::project_rules(q)});
    return &out.back();
  };
  with_preset("data parallel", "data_parallel", sharding::Mesh({{"data", n}}));
  with_preset("FSDP", "fsdp", sharding::Mesh({{"data", n}}));
  // A batch (or microbatch) that N does not divide: both on the most devices that divide it.
  const int64_t batch = p.training.batch_size / std::max<int64_t>(1, p.training.accumulate);
  for (int64_t d = n - 1; d >= 2 && batch > 0 && batch % n != 0; --d)
    if (batch % d == 0) {
      const std::string of = " (" + std::to_string(d) + " of " + std::to_string(n) + " devices)";
      with_preset("data parallel" + of, "data_parallel", sharding::Mesh({{"data", d}}));
      with_preset("FSDP" + of, "fsdp", sharding::Mesh({{"data", d}}));
      break;
    }
  for (int64_t d = 1; d <= n / 2; ++d)
    if (n % d == 0) {
      const sharding::Mesh mesh({{"data", d}, {"model", n / d}});
      with_preset("Megatron", "megatron", mesh);
      with_preset("2-D (hidden -> model)", "model_parallel", mesh);
      if (d >= 2) set_rule(with_preset("FSDP + Megatron", "megatron", mesh)->rules, "embed", {"data"});
    }
  // Megatron splits heads, widths and a convolution's output channels over model: where none of
  // the sizes dividing N divides them (25 heads on 64 devices), the sizes that do (5, 25) on as
  // many devices as they can use.
  std::vector<std::string> megatron_names;
  for (const char* name : {"mlp", "hidden", "heads", "channels"})
    if (std::find(names.begin(), names.end(), name) != names.end()) megatron_names.push_back(name);
  const int64_t split = common_size(report, megatron_names);
  for (int64_t m = 2; m <= std::min(split, n); ++m)
    if (split % m == 0 && n % m != 0) {
      const int64_t d = n / m;
      with_preset("Megatron (" + std::to_string(d * m) + " of " + std::to_string(n) + " devices)", "megatron",
                  sharding::Mesh({{"data", d}, {"model", m}}));
    }
  for (int64_t a = 2; a <= n / 2; ++a)
    if (n % a == 0) {
      Layout* l = with_preset("hybrid FSDP", "fsdp", sharding::Mesh({{"data", a}, {"fsdp", n / a}}));
      l->mesh = sharding::Mesh({{"data", a}, {"fsdp", n / a}});
      set_rule(l->rules, "batch", {"data", "fsdp"});
      set_rule(l->rules, "embed", {"fsdp"});
    }
  for (int64_t a = 2; a <= n / 4; ++a)
    for (int64_t b = 2; a * b <= n / 2; ++b)
      if (n % (a * b) == 0) {
        const sharding::Mesh mesh({{"data", a}, {"fsdp", b}, {"model", n / (a * b)}});
        Layout* l = with_preset("3-D (data, FSDP, Megatron)", "megatron", sharding::Mesh({{"data", a * b}, {"model", n / (a * b)}}));
        l->mesh = mesh;
        set_rule(l->rules, "batch", {"data", "fsdp"});
        set_rule(l->rules, "embed", {"fsdp"});
      }
  // Pipeline stages over every Repeat's layers (S dividing them all), data parallel beside them.
  std::vector<int64_t> repeats;
  for (const graph::NodeReport& node : report.nodes)
    if (node.type == "Repeat" && !node.params.empty()) repeats.push_back(node.params.front().layers);
  for (int64_t stages = 2; stages <= n && !repeats.empty(); ++stages) {
    if (n % stages != 0 || std::any_of(repeats.begin(), repeats.end(), [&](int64_t l) { return l % stages != 0; })) continue;
    const int64_t data = n / stages, m = pipeline_microbatches(p.training.batch_size, stages, data);
    if (m == 0) continue;
    Layout* l = with_preset("pipeline", "data_parallel", sharding::Mesh({{"data", data}}));
    l->mesh = sharding::Mesh({{"stage", stages}, {"data", data}});
    set_rule(l->rules, "layer", {"stage"});
    l->microbatches = m;
  }
  std::erase_if(out, [&](const Layout& l) { return !splits_on_every_axis(l, names); });
  try {  // the project's own, where its mesh has this many devices
    const sharding::Mesh own = sharding::project_mesh(p);
    if (own.device_count() == n) out.push_back({"the project's own", own, sharding::project_rules(p)});
  } catch (const std::exception&) {
    // A project whose own mesh or rules do not parse has no own candidate; the design check says why.
  }
  return out;
}

}  // namespace

std::vector<Candidate> advise(const project::Project& p, int64_t devices, const Hardware& hw, double capacity_per_device) {
  if (devices < 1) throw Error("advise: --devices must be at least 1, got " + std::to_string(devices));
  const graph::GraphReport report = project::analyze_project(p);
  if (!report.ok()) throw Error(p.display_name() + ": " + report.errors.front());

  std::vector<Layout> candidates;
  if (devices == 1) candidates.push_back({"one device", sharding::Mesh(), {}});
  else candidates = layouts(p, report, sharding::logical_names_of(report), devices);

  std::vector<Candidate> out;
  for (const Layout& l : candidates) {
    Candidate c;
    c.strategy = l.strategy;
    c.mesh = l.mesh.axes().empty() ? "" : l.mesh.str();
    c.rules = sharding::rules_str(l.rules);
    c.microbatches = l.microbatches;
    // Two strategies can come to the same mesh and rules: one candidate, both names.
    const auto same = std::find_if(out.begin(), out.end(), [&](const Candidate& o) { return o.mesh == c.mesh && o.rules == c.rules; });
    if (same != out.end()) {
      same->strategy += " = " + c.strategy;
      continue;
    }
    c.capacity_bytes = capacity_per_device;
    project::Project q = p;
    if (l.microbatches > 0) q.training.accumulate = l.microbatches;
    const sharding::ShardingReport r = sharding::analyze_sharding(q, report, l.mesh, l.rules);
    if (!r.errors.empty() || !r.plan) {
      c.error = r.errors.empty() ? "the step could not be partitioned" : r.errors.front();
      out.push_back(std::move(c));
      continue;
    }
    for (const sharding::DeviceMemory& d : r.devices) c.bytes_per_device = std::max(c.bytes_per_device, d.total());
    c.fits = c.bytes_per_device <= capacity_per_device;
    c.prediction = predict(*r.plan, l.mesh, hw);
    out.push_back(std::move(c));
  }
  auto group = [](const Candidate& c) { return !c.runs() ? 2 : c.fits ? 0 : 1; };
  std::stable_sort(out.begin(), out.end(), [&](const Candidate& a, const Candidate& b) {
    if (group(a) != group(b)) return group(a) < group(b);
    return group(a) == 0 && a.prediction.step_s < b.prediction.step_s;
  });
  return out;
}

}  // namespace shardlab::advisor
