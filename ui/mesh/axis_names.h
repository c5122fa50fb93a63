// What a mesh axis or a logical axis name may be, and the "data+model" text the rules table uses
// for a rule's mesh axes. Names are free-form as in Flax, except for the characters the text forms
// ("batch=data,embed=none,batch=data+model") use as separators.
#pragma once

#include <QString>
#include <string>
#include <vector>

namespace shardlab::ui {

// "" when `name` may name an axis; otherwise why not, starting with `what` ("mesh axis",
// "logical axis"). Mesh axes may not be called none/None: that word means "replicated".
QString axisNameProblem(const QString& name, const QString& what, bool meshAxis);

// A rule's mesh axes as typed: "data", "data+model", "" / "none" / "None" (replicated).
struct ParsedMeshAxes {
  std::vector<std::string> axes;
  QString problem;  // "" when the text is fine
};
ParsedMeshAxes parseMeshAxes(const QString& text);

// {"data", "model"} -> "data+model"; {} -> "None".
QString meshAxesText(const std::vector<std::string>& axes);

}  // namespace shardlab::ui
