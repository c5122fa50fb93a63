#include "engine/sharding/layout_problems.h"

#include <algorithm>
#include <cstdint>
#include <numeric>

#include "engine/util/strings.h"

namespace shardlab::sharding {

namespace {

constexpr size_t kNamed = 6;  // arrays a message names before "and N more"

std::string join_axes(const std::vector<std::string>& axes, const Mesh& mesh, bool sizes) {
  std::string s;
  for (const std::string& a : axes)
    s += (s.empty() ? "" : " x ") + a + (sizes ? " (" + std::to_string(mesh.axis_size(a)) + ")" : "");
  return s;
}

// The divisors of n nearest to p, below and above it: "2 or 4" for p = 3 and n = 128.
std::string nearest_divisors(int64_t n, int64_t p) {
  int64_t below = 1, above = 0;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) {
      if (d < p) below = d;
      else if (d > p) {
        above = d;
        break;
      }
    }
  return std::to_string(below) + (above ? " or " + std::to_string(above) : "");
}

}  // namespace

void LayoutProblems::add(const std::string& name, const PartitionSpec& spec, const Shape& shape, const std::string& error) {
  if (error.empty()) return;
  const size_t order = groups_.size();
  // A mesh axis the mesh lacks: whatever else is wrong follows from it.
  for (const auto& dim : spec.dims)
    for (const std::string& a : dim)
      if (mesh_.axis_index(a) < 0) {
        Group& g = groups_.try_emplace("missing:" + a, Group{order, {a}, true, {}, {}, {}}).first->second;
        g.hits.push_back({name, 0, 0});
        return;
      }
  // The first dimension its axes do not divide, when that is the error.
  if (spec.dims.size() <= shape.size())
    for (size_t i = 0; i < spec.dims.size(); ++i) {
      if (spec.dims[i].empty()) continue;
      const int64_t p = shards_along(spec, i, mesh_);
      if (shape[i] % p == 0) continue;
      if (error.find("is not divisible by") == std::string::npos) break;
      Group& g = groups_.try_emplace("split:" + join_axes(spec.dims[i], mesh_, false), Group{order, spec.dims[i], false, {}, {}, {}})
                     .first->second;
      g.hits.push_back({name, i, shape[i]});
      return;
    }
  groups_.try_emplace("other:" + name + ":" + error, Group{order, {}, false, {}, error, name});
}

std::vector<Diagnostic> LayoutProblems::diagnostics() const {
  std::vector<const Group*> ordered;
  for (const auto& [key, g] : groups_) ordered.push_back(&g);
  std::sort(ordered.begin(), ordered.end(), [](const Group* a, const Group* b) { return a->order < b->order; });
  std::vector<Diagnostic> out;
  for (const Group* g : ordered) {
    Diagnostic d;
    d.code = "layout.array";
    if (g->hits.empty()) {
      d.arrays = {g->array};
      d.field = "logical_axis_rules";
      d.message = d.reason = g->text;
      out.push_back(std::move(d));
      continue;
    }
    std::string arrays;
    for (size_t i = 0; i < g->hits.size(); ++i) {
      const Hit& h = g->hits[i];
      d.arrays.push_back(h.array);
      if (i >= kNamed) continue;
      arrays += (i ? ", '" : "'") + h.array + "'";
      if (!g->missing) arrays += " dimension " + std::to_string(h.dim) + " (" + std::to_string(h.size) + ")";
    }
    if (g->hits.size() > kNamed) arrays += " and " + std::to_string(g->hits.size() - kNamed) + " more";
    const std::string count = std::to_string(g->hits.size()) + (g->hits.size() == 1 ? " array" : " arrays");
    if (g->missing) {
      std::vector<std::string> names;
      for (const MeshAxis& a : mesh_.axes()) names.push_back(a.name);
      std::string m = "mesh " + mesh_.str() + " has no axis '" + g->axes[0] + "'";
      const std::string near = util::nearest(g->axes[0], names);
      if (!near.empty()) m += " (did you mean '" + near + "'?)";
      d.code = "rules.unknown_axis";
      d.field = "logical_axis_rules";
      d.message = d.reason = m + ", which the rules map " + count + " onto: " + arrays;
      d.fix = near.empty() ? "add a mesh axis '" + g->axes[0] + "', or map the rules onto the mesh's axes"
                           : "write '" + near + "' for '" + g->axes[0] + "' in the rules";
      out.push_back(std::move(d));
      continue;
    }
    const bool one = g->axes.size() == 1;
    int64_t common = 0, product = 1;
    for (const Hit& h : g->hits) common = std::gcd(common, h.size);
    for (const std::string& a : g->axes) product *= mesh_.axis_size(a);
    const std::string sizes = nearest_divisors(common, product);
    d.code = "layout.indivisible";
    d.field = "mesh";
    d.message = d.reason = std::string(one ? "mesh axis " : "mesh axes ") + join_axes(g->axes, mesh_, true) +
                           (one ? "" : ", " + std::to_string(product) + " ways,") + " does not divide " + count +
                           " it splits: " + arrays + "; " +
                           (one ? "sizes of " + g->axes[0] : "products of " + join_axes(g->axes, mesh_, false)) +
                           " nearest " + std::to_string(product) + " that divide them all: " + sizes;
    d.fix = (one ? "set mesh axis '" + g->axes[0] + "' to " : "make " + join_axes(g->axes, mesh_, false) + " ") + sizes;
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace shardlab::sharding
