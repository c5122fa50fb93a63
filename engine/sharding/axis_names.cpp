#include "engine/sharding/axis_names.h"

#include <algorithm>
#include <cctype>

#include "engine/util/strings.h"

namespace shardlab::sharding {

namespace {

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool is_none(const std::string& s) { return s == "none" || s == "None" || s == "NONE"; }

}  // namespace

std::string axis_name_problem(const std::string& name, const std::string& what, bool mesh_axis) {
  if (name.empty()) return what + ": the name is empty";
  for (const char c : name)
    if (std::isspace(static_cast<unsigned char>(c)) || c == ',' || c == '=' || c == '+')
      return what + " '" + name + "': a name may not contain spaces, ',', '=' or '+' (rules write several axes as data+model)";
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (mesh_axis && lower == "none") return what + " '" + name + "': 'none' means replicated, so it cannot name a mesh axis";
  return {};
}

ParsedMeshAxes parse_mesh_axes(const std::string& text) {
  ParsedMeshAxes out;
  const std::string t = trimmed(text);
  if (t.empty() || is_none(t)) return out;
  for (const std::string& piece : util::split(t, '+')) {
    const std::string a = trimmed(piece);
    if (a.empty()) {
      out.problem = "mesh axes '" + t + "': an empty name between '+' signs (write e.g. data+model)";
      return out;
    }
    if (std::string p = axis_name_problem(a, "mesh axis", true); !p.empty()) {
      out.problem = std::move(p);
      return out;
    }
    if (std::find(out.axes.begin(), out.axes.end(), a) != out.axes.end()) {
      out.problem = "mesh axes '" + t + "': axis '" + a + "' is listed twice";
      return out;
    }
    out.axes.push_back(a);
  }
  return out;
}

std::string mesh_axes_text(const std::vector<std::string>& axes) {
  if (axes.empty()) return "None";
  std::string s;
  for (const std::string& a : axes) s += (s.empty() ? "" : "+") + a;
  return s;
}

}  // namespace shardlab::sharding
