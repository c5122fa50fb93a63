#include "engine/sharding/presets.h"

#include <algorithm>

#include "engine/sharding/layout.h"
#include "engine/sharding/logical_rules.h"
#include "engine/sharding/mesh.h"
#include "engine/util/error.h"

namespace shardlab::sharding {

namespace {

// When a preset's rule is written: Always (the strategy's core, even if no array uses the name),
// IfUsed (only when the project has the name), or Group: the model-sharded names (mlp, hidden,
// heads) that are used, or all of them when the project uses none, so the strategy still shows.
enum class When { Always, IfUsed, Group };

struct PresetRule {
  std::string logical;
  std::vector<std::string> mesh;
  When when = When::IfUsed;
};

// The Flax pjit guide's 2x4 ('data', 'model') mesh: 8 devices.
constexpr int64_t kDefaultDevices = 8;

int64_t device_count_of(const project::Project& p) {
  const int64_t n = project_mesh(p).device_count();
  return n > 1 ? n : kDefaultDevices;
}

Mesh data_mesh(const project::Project& p) { return Mesh({{"data", device_count_of(p)}}); }

// Keeps a mesh that already has 'data' and 'model'; otherwise splits the device count into
// data x model with the smallest data size that leaves model at least 2 (8 -> 2 x 4, as in the Flax pjit guide).
Mesh data_model_mesh(const project::Project& p) {
  const Mesh current = project_mesh(p);
  if (current.axis_index("data") >= 0 && current.axis_index("model") >= 0) return current;
  const int64_t n = device_count_of(p);
  int64_t data = 1;
  for (int64_t d = 2; d * 2 <= n; ++d)
    if (n % d == 0) {
      data = d;
      break;
    }
  return Mesh({{"data", data}, {"model", n / data}});
}

LogicalRules build_rules(const std::vector<PresetRule>& preset, const std::vector<std::string>& names) {
  auto uses = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  const bool group_used = std::any_of(preset.begin(), preset.end(),
                                     [&](const PresetRule& r) { return r.when == When::Group && uses(r.logical); });
  LogicalRules rules;
  for (const PresetRule& r : preset)
    if (r.when == When::Always || uses(r.logical) || (r.when == When::Group && !group_used))
      rules.push_back({r.logical, r.mesh});
  // Every other name the project uses is pinned replicated, so none is reported as lacking a rule.
  for (const std::string& n : names) {
    const bool covered =
        std::any_of(rules.begin(), rules.end(), [&](const LogicalRule& r) { return r.logical == n; });
    if (!covered) rules.push_back({n, {}});
  }
  return rules;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      {"data_parallel", "Data parallel",
       "batch -> data on a one-axis mesh data=N: every device holds the whole model and a slice of the "
       "batch; every other logical name replicated."},
      {"model_parallel", "Model parallel (hidden -> model)",
       "Two-dimensional, as in the Flax pjit guide: batch -> data, hidden -> model, embed -> None, layer -> None "
       "on a data x model mesh (2 x 4 for 8 devices)."},
      {"megatron", "Megatron",
       "Tensor parallel in Megatron's style: batch -> data; mlp, hidden, heads and a convolution's output "
       "channels -> model; embed, kv and layer -> None, on a data x model mesh."},
      {"fsdp", "FSDP",
       "Fully sharded data parallel: batch -> data and embed -> data on a one-axis mesh data=N, so "
       "parameters, gradients and optimizer state are split along data too."},
  };
  return all;
}

std::vector<std::string> logical_names_of(const graph::GraphReport& g) {
  std::vector<std::string> names;
  auto add = [&](const std::vector<std::string>& axes) {
    for (const std::string& a : axes)
      if (!a.empty() && std::find(names.begin(), names.end(), a) == names.end()) names.push_back(a);
  };
  auto walk = [&](const std::vector<graph::NodeReport>& nodes, auto&& self) -> void {
    for (const graph::NodeReport& n : nodes) {
      for (const graph::ParamInfo& info : n.params) add(info.axes);
      add(n.output.axes);
      // Arrays made inside a layer (attention's weights, over 'keys') are laid out by the rules too.
      for (const graph::InnerArray& inner : n.inner) add(inner.array.axes);
      self(n.body, self);
    }
  };
  walk(g.nodes, walk);
  return names;
}

void apply_preset(const std::string& id, const std::vector<std::string>& names, project::Project& p) {
  const std::vector<std::string> data{"data"}, model{"model"};
  Mesh mesh;
  std::vector<PresetRule> rules;
  if (id == "data_parallel") {
    mesh = data_mesh(p);
    rules = {{"batch", data, When::Always}};
  } else if (id == "model_parallel") {
    // The Flax pjit guide: rules = (('batch', 'data'), ('hidden', 'model')), with embed and layer left
    // unsharded; they are written out so the check does not report them as lacking a rule.
    mesh = data_model_mesh(p);
    rules = {{"batch", data, When::Always},
             {"hidden", model, When::Always},
             {"embed", {}, When::Always},
             {"layer", {}, When::IfUsed}};
  } else if (id == "megatron") {
    mesh = data_model_mesh(p);
    rules = {{"batch", data, When::Always}, {"mlp", model, When::Group}, {"hidden", model, When::Group},
             {"heads", model, When::Group}, {"channels", model, When::IfUsed}, {"kv", {}, When::IfUsed},
             {"embed", {}, When::Always},
             {"layer", {}, When::IfUsed}};
  } else if (id == "fsdp") {
    mesh = data_mesh(p);
    rules = {{"batch", data, When::Always}, {"embed", data, When::Always}};
  } else {
    std::string known;
    for (const Preset& pr : presets()) known += (known.empty() ? "" : ", ") + pr.id;
    throw Error("preset '" + id + "': no such preset (there are " + known + ")");
  }
  p.mesh = mesh_to_json(mesh);
  p.logical_axis_rules = rules_to_json(build_rules(rules, names));
}

}  // namespace shardlab::sharding
