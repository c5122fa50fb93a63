// What a mesh axis or a logical axis name may be, and the "data+model" text a rule's mesh axes are
// written in. Names are free-form as in Flax, except for the characters the text forms
// ("batch=data,embed=none,batch=data+model") use as separators. One set of rules for the CLI's
// --rules, the project loader and the GUI's rules table.
#pragma once

#include <string>
#include <vector>

namespace shardlab::sharding {

// "" when `name` may name an axis; otherwise why not, starting with `what` ("mesh axis",
// "rule 2: logical axis"). A mesh axis may not be called none/None: that word means replicated.
std::string axis_name_problem(const std::string& name, const std::string& what, bool mesh_axis);

// A rule's mesh axes as typed: "data", "data+model", "" / "none" / "None" (replicated).
struct ParsedMeshAxes {
  std::vector<std::string> axes;
  std::string problem;  // "" when the text is fine
};
ParsedMeshAxes parse_mesh_axes(const std::string& text);

// {"data", "model"} -> "data+model"; {} -> "None".
std::string mesh_axes_text(const std::vector<std::string>& axes);

}  // namespace shardlab::sharding
