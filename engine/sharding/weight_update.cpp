#include "engine/sharding/weight_update.h"

#include <algorithm>

namespace shardlab::sharding {

AxesPerDim optimizer_state_axes(const AxesPerDim& param, const Shape& shape, const Mesh& mesh,
                                const std::vector<std::string>& batch_axes) {
  AxesPerDim out = param;
  out.resize(shape.size());
  std::vector<std::string> extra;
  int64_t group = 1;
  for (const std::string& a : batch_axes) {
    const bool used = std::any_of(out.begin(), out.end(), [&](const std::vector<std::string>& d) {
      return std::find(d.begin(), d.end(), a) != d.end();
    });
    // An axis the mesh lacks is the batch's own error to report; it cannot split anything here.
    if (used || mesh.axis_index(a) < 0 || mesh.axis_size(a) == 1) continue;
    extra.push_back(a);
    group *= mesh.axis_size(a);
  }
  if (extra.empty()) return out;
  for (size_t d = 0; d < shape.size(); ++d)
    if (out[d].empty() && shape[d] % group == 0) {
      out[d] = extra;
      return out;
    }
  return out;
}

}  // namespace shardlab::sharding
