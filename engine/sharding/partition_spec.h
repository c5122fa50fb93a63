// PartitionSpec: how an array's dimensions map onto mesh axes, as in jax.sharding.PartitionSpec.
// Per dimension no axis (replicated), one, or several (the first is major); a spec shorter than
// the array leaves its trailing dimensions replicated.
#pragma once

#include <string>
#include <vector>

#include "engine/sharding/mesh.h"
#include "engine/tensor/tensor.h"

namespace shardlab::sharding {

struct PartitionSpec {
  std::vector<std::vector<std::string>> dims;

  PartitionSpec() = default;
  explicit PartitionSpec(std::vector<std::vector<std::string>> d) : dims(std::move(d)) {}
  // PartitionSpec('data', None), PartitionSpec(('data', 'model'),)
  std::string str() const;
  bool operator==(const PartitionSpec& o) const;
  // The mesh axes of dimension i (empty past the spec's end).
  const std::vector<std::string>& axes_of(size_t i) const;
  bool replicated() const;
};

// Checks the spec against the mesh and the array's shape; errors name the array, the dimension and
// the axes: an unknown axis, an axis used twice, a spec longer than the rank, and a dimension not
// divisible by its axes' product (with the nearest sizes that are).
void validate(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh, const std::string& array);
// Like validate, but returns the message instead of throwing ("" when valid).
std::string validation_error(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh, const std::string& array);

// Number of shards along dimension i (the product of its mesh axes' sizes).
int64_t shards_along(const PartitionSpec& spec, size_t dim, const Mesh& mesh);
Shape shard_shape(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh);

// The block a device holds: per dimension its block index (the mixed-radix number of the device's
// coordinates over that dimension's mesh axes, first axis major) and the element range.
struct Block {
  std::vector<int64_t> index;
  std::vector<int64_t> start;
  Shape shape;
};
Block device_block(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh, int64_t device);

// Every distinct block with the devices that hold it (sorted), in block-index order.
struct BlockOwners {
  Block block;
  std::vector<int64_t> devices;
};
std::vector<BlockOwners> block_owners(const PartitionSpec& spec, const Shape& shape, const Mesh& mesh);

}  // namespace shardlab::sharding
