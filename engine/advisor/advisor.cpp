#include "engine/advisor/advisor.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>
#include <numeric>

#include "engine/sharding/layout.h"
#include "engine/sharding/presets.h"
#include "engine/util/bytes.h"
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
  // Grouped-query attention's key and value heads go with the heads where the model axis divides
  // them (as Megatron-LM splits them); where it does not, each device keeps them whole.
  const bool has_kv_heads = std::find(names.begin(), names.end(), "kv_heads") != names.end();
  const int64_t kv_heads = has_kv_heads ? common_size(report, {"kv_heads"}) : 0;
  auto megatron = [&](const std::string& strategy, sharding::Mesh mesh) {
    Layout* l = with_preset(strategy, "megatron", mesh);
    const int64_t m = mesh.axis_index("model") >= 0 ? mesh.axis_size("model") : 1;
    if (kv_heads > 0 && m > 1 && kv_heads % m == 0) set_rule(l->rules, "kv_heads", {"model"});
    return l;
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
      megatron("Megatron", mesh);
      with_preset("2-D (hidden -> model)", "model_parallel", mesh);
      if (d >= 2) set_rule(megatron("FSDP + Megatron", mesh)->rules, "embed", {"data"});
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
      megatron("Megatron (" + std::to_string(d * m) + " of " + std::to_string(n) + " devices)", sharding::Mesh({{"data", d}, {"model", m}}));
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
        Layout* l = megatron("3-D (data, FSDP, Megatron)", sharding::Mesh({{"data", a * b}, {"model", n / (a * b)}}));
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

// A layout partitioned for real and predicted: its memory per device, its step, what it moves.
Candidate evaluate(const project::Project& p, const graph::GraphReport& report, const std::string& strategy, const sharding::Mesh& mesh,
                   const sharding::LogicalRules& rules, int64_t microbatches, const Hardware& hw, double capacity) {
  Candidate c;
  c.strategy = strategy;
  c.mesh = mesh.axes().empty() ? "" : mesh.str();
  c.rules = sharding::rules_str(rules);
  c.microbatches = microbatches;
  c.splits = describe_splits(mesh, rules);
  c.capacity_bytes = capacity;
  project::Project q = p;
  if (microbatches > 0) q.training.accumulate = microbatches;
  const sharding::ShardingReport r = sharding::analyze_sharding(q, report, mesh, rules);
  if (!r.errors.empty() || !r.plan) {
    c.error = r.errors.empty() ? "the step could not be partitioned" : r.errors.front();
    return c;
  }
  for (const sharding::DeviceMemory& d : r.devices) c.bytes_per_device = std::max(c.bytes_per_device, d.total());
  c.fits = c.bytes_per_device <= capacity;
  c.prediction = predict(*r.plan, mesh, hw);
  for (const sharding::CollectiveInfo& info : r.plan->collectives) {
    c.moved_bytes += info.bytes;
    ++c.collectives;
    const std::string kind = collective_kind(info.op);
    c.moved_by_kind[kind.empty() ? "send/recv" : kind] += info.bytes;
  }
  return c;
}

}  // namespace

std::vector<Candidate> advise(const project::Project& p, int64_t devices, const Hardware& hw, double capacity_per_device,
                              const AdviseOptions& options, SearchSummary* summary) {
  if (devices < 1) throw Error("advise: --devices must be at least 1, got " + std::to_string(devices));
  const auto started = std::chrono::steady_clock::now();
  const graph::GraphReport report = project::analyze_project(p);
  if (!report.ok()) throw Error(p.display_name() + ": " + report.errors.front());

  std::vector<Layout> candidates;
  if (devices == 1) candidates.push_back({"one device", sharding::Mesh(), {}});
  else candidates = layouts(p, report, sharding::logical_names_of(report), devices);

  std::vector<Candidate> out;
  std::vector<std::string> keys;  // of the strategies' layouts, which the search need not list again
  for (const Layout& l : candidates) {
    // Two strategies can come to the same mesh and rules: one candidate, both names.
    const std::string mesh = l.mesh.axes().empty() ? "" : l.mesh.str(), rules = sharding::rules_str(l.rules);
    const auto same = std::find_if(out.begin(), out.end(), [&](const Candidate& o) { return o.mesh == mesh && o.rules == rules; });
    if (same != out.end()) {
      same->strategy += " = " + l.strategy;
      continue;
    }
    out.push_back(evaluate(p, report, l.strategy, l.mesh, l.rules, l.microbatches, hw, capacity_per_device));
    if (l.microbatches == 0) keys.push_back(layout_key(l.mesh, l.rules));
  }

  // The search: layouts in order of their lower bound, until the next bound is no better than the
  // best step found (the strategies' best to begin with) or the limit is reached.
  SearchSummary s;
  if (options.search && devices > 1) {
    const std::vector<SearchedLayout> found = search_layouts(p, report, devices, hw, capacity_per_device, s.counts, options.max_axes);
    s.survivors = int64_t(found.size());
    double best = std::numeric_limits<double>::infinity();
    for (const Candidate& c : out)
      if (c.runs() && c.fits) best = std::min(best, c.prediction.step_s);
    std::vector<Candidate> searched;
    for (size_t i = 0; i < found.size(); ++i) {
      if (options.prune_by_bound && found[i].bound_s >= best) {
        s.past_bound = int64_t(found.size() - i);
        break;
      }
      if (s.partitioned >= options.max_partitions) {
        s.past_limit = int64_t(found.size() - i);
        break;
      }
      ++s.partitioned;
      if (options.progress) options.progress(s.partitioned, s.survivors);
      Candidate c = evaluate(p, report, "searched", found[i].mesh, found[i].rules, 0, hw, capacity_per_device);
      c.bound_s = found[i].bound_s;
      if (!c.runs()) {
        ++s.failed;
        continue;
      }
      if (c.fits) best = std::min(best, c.prediction.step_s);
      if (std::find(keys.begin(), keys.end(), layout_key(found[i].mesh, found[i].rules)) != keys.end()) {
        ++s.same_as_strategy;
        continue;
      }
      searched.push_back(std::move(c));
    }
    std::stable_sort(searched.begin(), searched.end(), [](const Candidate& a, const Candidate& b) {
      if (a.fits != b.fits) return a.fits;
      return a.prediction.step_s < b.prediction.step_s;
    });
    if (int64_t(searched.size()) > options.shown) searched.resize(size_t(std::max<int64_t>(0, options.shown)));
    for (Candidate& c : searched) out.push_back(std::move(c));
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (summary) *summary = s;

  auto group = [](const Candidate& c) { return !c.runs() ? 2 : c.fits ? 0 : 1; };
  std::stable_sort(out.begin(), out.end(), [&](const Candidate& a, const Candidate& b) {
    if (group(a) != group(b)) return group(a) < group(b);
    return group(a) == 0 && a.prediction.step_s < b.prediction.step_s;
  });
  return out;
}

std::string explain(const Candidate& c) {
  auto ms = [](double s) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
    return std::string(b);
  };
  const std::string where = c.strategy + " on " + (c.mesh.empty() ? "one device" : c.mesh);
  if (!c.runs()) return where + " cannot run: " + c.error;
  std::string out = where + " splits " + (c.splits == "nothing split" ? "nothing" : c.splits) + "; every other axis is whole on each device.";
  if (c.collectives == 0) {
    out += " It moves nothing between devices.";
  } else {
    out += " Each device moves " + util::format_bytes(c.moved_bytes) + " per step in " + std::to_string(c.collectives) + " collectives (";
    bool first = true;
    for (const auto& [kind, bytes] : c.moved_by_kind) {
      out += std::string(first ? "" : ", ") + kind + " " + util::format_bytes(bytes);
      first = false;
    }
    out += ").";
  }
  const Prediction& p = c.prediction;
  out += " Predicted " + ms(p.step_s) + (p.band_s > 0 ? " (+-" + ms(p.band_s) + ", the calibration's spread)" : "") + ", bound by " + p.bound_by + " (compute " + ms(p.compute_s) + ", memory " + ms(p.memory_s) +
         ", communication " + ms(p.communication_s) + "); " + util::format_bytes(c.bytes_per_device) + " per device" +
         (c.fits ? "." : ", more than a device holds (" + util::format_bytes(c.capacity_bytes) + ").");
  return out;
}

std::string describe(const SearchSummary& s) {
  std::string axes;
  for (const std::string& a : s.counts.axes) axes += (axes.empty() ? "" : ", ") + a;
  char b[640];
  std::snprintf(b, sizeof b,
                "Searched %s on %lld meshes: %lld assignments, pruned %lld that a mesh axis does not divide, %lld with an idle mesh "
                "axis, %lld whose parameters do not fit, %lld repeats; of %lld left, partitioned %lld in order of their lower bound "
                "(%lld refused, %lld equal to a strategy), stopped with %lld bounded out and %lld past the limit, in %.1f s.",
                axes.empty() ? "no axes" : axes.c_str(), (long long)s.counts.meshes, (long long)s.counts.assignments,
                (long long)s.counts.indivisible, (long long)s.counts.idle_axis, (long long)s.counts.too_big, (long long)s.counts.duplicates,
                (long long)s.survivors, (long long)s.partitioned, (long long)s.failed, (long long)s.same_as_strategy,
                (long long)s.past_bound, (long long)s.past_limit, s.seconds);
  return b;
}

}  // namespace shardlab::advisor
