#include "engine/sharding/logical_rules.h"

#include <algorithm>
#include <set>

#include "engine/sharding/axis_names.h"
#include "engine/util/error.h"
#include "engine/util/strings.h"

namespace shardlab::sharding {

LogicalRules parse_rules(const std::string& text) {
  LogicalRules rules;
  for (const std::string& item : util::split(text, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw Error("rules '" + text + "': '" + item + "' is not logical=mesh (e.g. batch=data, embed=none, batch=data+model)");
    // The same names and "data+model" syntax as the GUI's rules table (sharding/axis_names).
    LogicalRule r{item.substr(0, eq), {}};
    if (const std::string why = axis_name_problem(r.logical, "logical axis", false); !why.empty())
      throw Error("rules '" + text + "': " + why);
    ParsedMeshAxes axes = parse_mesh_axes(item.substr(eq + 1));
    if (!axes.problem.empty()) throw Error("rules '" + text + "': " + axes.problem);
    r.mesh = std::move(axes.axes);
    rules.push_back(r);
  }
  return rules;
}

LogicalRules rules_from_json(const nlohmann::ordered_json& j, const std::string& where) {
  if (j.is_null()) return {};
  if (!j.is_array()) throw Error(where + ": expected a list of [logical name, mesh axes] pairs");
  LogicalRules rules;
  for (size_t i = 0; i < j.size(); ++i) {
    const auto& e = j[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!e.is_array() || e.size() != 2 || !e[0].is_string())
      throw Error(at + ": expected [\"logical name\", \"mesh axis\" | [\"axis\", ...] | null], got " + e.dump());
    LogicalRule r{e[0].get<std::string>(), {}};
    if (e[1].is_string()) {
      r.mesh.push_back(e[1].get<std::string>());
    } else if (e[1].is_array()) {
      for (const auto& a : e[1]) {
        if (!a.is_string()) throw Error(at + ": mesh axes must be names, got " + a.dump());
        r.mesh.push_back(a.get<std::string>());
      }
    } else if (!e[1].is_null()) {
      throw Error(at + ": mesh axes must be a name, a list of names or null, got " + e[1].dump());
    }
    rules.push_back(r);
  }
  return rules;
}

nlohmann::ordered_json rules_to_json(const LogicalRules& rules) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const LogicalRule& r : rules) {
    nlohmann::ordered_json m = nullptr;
    if (r.mesh.size() == 1) m = r.mesh[0];
    else if (r.mesh.size() > 1) m = r.mesh;
    j.push_back({r.logical, m});
  }
  return j;
}

std::string rules_str(const LogicalRules& rules) {
  std::string s;
  for (const LogicalRule& r : rules) {
    std::string m;
    for (const std::string& a : r.mesh) m += (m.empty() ? "" : "+") + a;
    s += (s.empty() ? "" : ",") + r.logical + "=" + (m.empty() ? "none" : m);
  }
  return s;
}

std::vector<std::string> unknown_rule_axes(const LogicalRules& rules, const Mesh& mesh, const std::string& where) {
  std::vector<std::string> names;
  for (const MeshAxis& a : mesh.axes()) names.push_back(a.name);
  std::vector<std::string> out;
  for (size_t i = 0; i < rules.size(); ++i)
    for (const std::string& axis : rules[i].mesh) {
      if (mesh.axis_index(axis) >= 0) continue;
      std::string m = where + "[" + std::to_string(i) + "] (" + rules_str({rules[i]}) + "): mesh " + mesh.str() +
                      " has no axis '" + axis + "'";
      const std::string near = util::nearest(axis, names);
      if (!near.empty()) m += "; did you mean '" + near + "'?";
      else if (!names.empty()) {
        std::string list;
        for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
        m += " (its axes: " + list + ")";
      }
      else m += " (a mesh of one device has no axes: add the axis to the mesh)";
      out.push_back(m);
    }
  return out;
}

Fallback parse_fallback(const std::string& text, const std::string& where) {
  if (text.empty() || text == "unsharded") return Fallback::Unsharded;
  if (text == "error") return Fallback::Error;
  if (text == "no_constraint") return Fallback::NoConstraint;
  throw Error(where + ": unknown fallback '" + text + "' (expected unsharded, error or no_constraint)");
}

LogicalMapping logical_to_mesh(const std::vector<std::string>& names, const LogicalRules& rules,
                               const std::string& array, Fallback fallback) {
  std::set<std::string> seen;
  for (const std::string& n : names)
    if (!n.empty() && !seen.insert(n).second)
      throw Error("array '" + array + "': logical axis '" + n + "' names two dimensions");
  // As flax.linen.partitioning._logical_to_mesh_axes: the outer loop runs over rules, so rule
  // order decides between dimensions competing for one mesh axis.
  std::vector<bool> assigned(names.size(), false);
  std::vector<std::vector<std::string>> result(names.size());
  std::set<std::string> taken;
  for (const LogicalRule& r : rules) {
    auto pos = std::find(names.begin(), names.end(), r.logical);
    if (r.logical.empty() || pos == names.end()) continue;
    const size_t i = size_t(pos - names.begin());
    const bool free = std::none_of(r.mesh.begin(), r.mesh.end(), [&](const std::string& a) { return taken.count(a); });
    if (!free || assigned[i]) continue;
    assigned[i] = true;
    result[i] = r.mesh;
    taken.insert(r.mesh.begin(), r.mesh.end());
  }
  LogicalMapping m;
  m.unconstrained.assign(names.size(), false);
  for (size_t i = 0; i < names.size(); ++i) {
    if (assigned[i] || names[i].empty()) continue;
    // No rule for this name at all, or every rule for it found its axes taken.
    const bool has_rule = std::any_of(rules.begin(), rules.end(), [&](const LogicalRule& r) { return r.logical == names[i]; });
    if (!has_rule) {
      if (fallback == Fallback::Error)
        throw Error("array '" + array + "': logical axis '" + names[i] + "' (dimension " + std::to_string(i) +
                    ") has no rule, and its constraint asks for one");
      if (fallback == Fallback::NoConstraint) m.unconstrained[i] = true;
      m.unmatched.push_back(names[i]);
    }
  }
  m.spec.dims = result;  // full length, trailing Nones kept, as Flax prints it
  return m;
}

}  // namespace shardlab::sharding
