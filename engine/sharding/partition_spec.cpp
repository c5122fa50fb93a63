#include "engine/sharding/partition_spec.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/ir/partition_rule.h"
#include "engine/util/error.h"

namespace shardlab::sharding {

namespace {
const std::vector<std::string> kNone;
}

std::string PartitionSpec::str() const { return ir::Layout{dims, {}}.str(); }

bool PartitionSpec::operator==(const PartitionSpec& o) const {
  // Trailing replicated dimensions do not change the sharding.
  const size_t n = std::max(dims.size(), o.dims.size());
  for (size_t i = 0; i < n; ++i)
    if (axes_of(i) != o.axes_of(i)) return false;
  return true;
}

const std::vector<std::string>& PartitionSpec::axes_of(size_t i) const { return i < dims.size() ? dims[i] : kNone; }

bool PartitionSpec::replicated() const {
  return std::all_of(dims.begin(), dims.end(), [](const auto& d) { return d.empty(); });
}

int64_t shards_along(const PartitionSpec& spec, size_t dim, const Mesh& mesh) {
  int64_t n = 1;
  for (const std::string& a : spec.axes_of(dim)) n *= mesh.axis_size(a);
  return n;
}

std::string validation_error(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh, const std::string& array) {
  const std::string who = "array '" + array + "' " + shape_str(shape) + " with " + spec.str();
  if (spec.dims.size() > shape.size())
    return who + ": the spec has " + std::to_string(spec.dims.size()) + " entries for an array of rank " +
           std::to_string(shape.size());
  std::set<std::string> used;
  for (size_t i = 0; i < spec.dims.size(); ++i)
    for (const std::string& a : spec.dims[i]) {
      if (mesh.axis_index(a) < 0)
        return who + ": dimension " + std::to_string(i) + " names mesh axis '" + a + "', which mesh " + mesh.str() +
               " does not have";
      if (!used.insert(a).second)
        return who + ": mesh axis '" + a + "' is used twice (again by dimension " + std::to_string(i) + ")";
    }
  for (size_t i = 0; i < spec.dims.size(); ++i) {
    const int64_t p = shards_along(spec, i, mesh);
    if (shape[i] % p == 0) continue;
    std::string axes;
    for (const std::string& a : spec.dims[i]) axes += (axes.empty() ? "" : " x ") + a + " (" + std::to_string(mesh.axis_size(a)) + ")";
    const int64_t lo = shape[i] / p * p, hi = (shape[i] / p + 1) * p;
    return who + ": dimension " + std::to_string(i) + " of size " + std::to_string(shape[i]) +
           " is not divisible by " + std::to_string(p) + " = " + axes + "; the nearest sizes that are: " +
           (lo > 0 ? std::to_string(lo) + " or " : "") + std::to_string(hi);
  }
  return "";
}

void validate(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh, const std::string& array) {
  std::string e = validation_error(spec, shape, mesh, array);
  if (!e.empty()) throw Error(e);
}

Shape shard_shape(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh) {
  Shape out = shape;
  for (size_t i = 0; i < out.size(); ++i) out[i] /= shards_along(spec, i, mesh);
  return out;
}

Block device_block(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh, int64_t device) {
  const std::vector<int64_t> c = mesh.coords(device);
  Block b;
  b.shape = shard_shape(spec, shape, mesh);
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t idx = 0;
    for (const std::string& a : spec.axes_of(i)) {
      const int k = mesh.axis_index(a);
      idx = idx * mesh.axes()[size_t(k)].size + c[size_t(k)];
    }
    b.index.push_back(idx);
    b.start.push_back(idx * b.shape[i]);
  }
  return b;
}

std::vector<BlockOwners> block_owners(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh) {
  std::map<std::vector<int64_t>, BlockOwners> by_index;
  for (int64_t d = 0; d < mesh.device_count(); ++d) {
    Block b = device_block(spec, shape, mesh, d);
    auto& o = by_index[b.index];
    o.block = b;
    o.devices.push_back(d);
  }
  std::vector<BlockOwners> out;
  for (auto& [idx, o] : by_index) out.push_back(std::move(o));
  return out;
}

}  // namespace shardlab::sharding
