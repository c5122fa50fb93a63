// Where a device's block of an array sits in the whole array, for kernels whose values depend on
// the global element index (dropout's counter-based mask): each local index maps to the index the
// same element has in the unsharded array, so a sharded run draws the mask one device would.
#pragma once

#include <cstdint>

#include "engine/util/hash.h"

namespace shardlab::backends {

struct ShardIndex {
  static constexpr int kMaxRank = 8;
  int rank = 0;  // 0: the block is the whole array
  int64_t local[kMaxRank] = {};   // the block's shape
  int64_t offset[kMaxRank] = {};  // its first element's coordinates in the whole array
  int64_t stride[kMaxRank] = {};  // the whole array's row-major strides
};

// The global index of element `i` of the block (row-major).
SHARDLAB_HOST_DEVICE inline int64_t global_index(const ShardIndex& s, int64_t i) {
  if (s.rank == 0) return i;
  int64_t g = 0;
  for (int d = s.rank - 1; d >= 0; --d) {
    g += (s.offset[d] + i % s.local[d]) * s.stride[d];
    i /= s.local[d];
  }
  return g;
}

}  // namespace shardlab::backends
