// What the CUDA backend's kernel files share: the block size, the grid for n elements, and the
// grid-stride loop every elementwise kernel runs. Included by .cu files only.
#pragma once

#include <cstdint>

namespace shardlab::backends::cuda {

constexpr int kThreads = 256;

// Blocks for n elements at kThreads each, at least one, capped where a grid-stride loop covers the rest.
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return unsigned(b < 1 ? 1 : b > 65535 * 32 ? 65535 * 32 : b);
}

}  // namespace shardlab::backends::cuda

// Grid-stride loop over [0, n).
#define FOR_EACH(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)
