// Logical axis rules with flax.linen's semantics: an ordered list of (logical name -> mesh axes or
// None). Rules are applied in order; a rule assigns its mesh axes to the dimension with its
// logical name if that dimension is still unassigned and none of its mesh axes is taken yet by
// this array (so repeated names act as ordered fallbacks); a rule to None pins the dimension
// replicated; a name no rule assigns stays replicated, and is reported so the user can see it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/sharding/partition_spec.h"

namespace shardlab::sharding {

struct LogicalRule {
  std::string logical;
  std::vector<std::string> mesh;  // empty: None (replicated)
};
using LogicalRules = std::vector<LogicalRule>;

// "batch=data,hidden=model,embed=none,batch=data+model"
LogicalRules parse_rules(const std::string& text);
// [["batch", "data"], ["hidden", "model"], ["embed", null], ["batch", ["data", "model"]]]
LogicalRules rules_from_json(const nlohmann::ordered_json& j, const std::string& where);
nlohmann::ordered_json rules_to_json(const LogicalRules& r);
std::string rules_str(const LogicalRules& r);

// One message per mesh axis a rule names that `mesh` does not have, naming the rule (by its
// position under `where`, e.g. "p.shardlab.json: logical_axis_rules") and, for a near miss, the
// axis probably meant. Flax would fail only when the rule is applied; this finds it up front.
std::vector<std::string> unknown_rule_axes(const LogicalRules& rules, const Mesh& mesh, const std::string& where);

// What with_logical_constraint does with a logical name that no rule maps (Flax's RulesFallback).
enum class Fallback { Unsharded, Error, NoConstraint };
// "unsharded" (or ""), "error", "no_constraint"; errors name `where`.
Fallback parse_fallback(const std::string& text, const std::string& where);

struct LogicalMapping {
  PartitionSpec spec;
  std::vector<std::string> unmatched;  // logical names no rule applied to (left replicated)
  std::vector<bool> unconstrained;     // per dimension: left to propagation (Fallback::NoConstraint)
};

// Maps one array's logical names ("" for none) to a PartitionSpec. Throws Error naming the array
// when a name appears twice, or, with Fallback::Error, when a name has no rule.
LogicalMapping logical_to_mesh(const std::vector<std::string>& names, const LogicalRules& rules,
                               const std::string& array, Fallback fallback = Fallback::Unsharded);

}  // namespace shardlab::sharding
