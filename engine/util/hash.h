// Counter-based hashing: random numbers that are pure functions of (key, index), so values never
// depend on evaluation order, threading or sharding.
#pragma once

#include <cstdint>
#include <string_view>

// The CUDA backend's kernels draw the same numbers as the CPU's, from this same code.
#if defined(__CUDACC__)
#define SHARDLAB_HOST_DEVICE __host__ __device__
#else
#define SHARDLAB_HOST_DEVICE
#endif

namespace shardlab::util {

// splitmix64's finaliser: a bijective mix of 64 bits.
SHARDLAB_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) from a counter: the same (key, index) always gives the same number.
SHARDLAB_HOST_DEVICE inline double counter_uniform(uint64_t key, uint64_t index) {
  return double(mix64(key ^ mix64(index + 0x9e3779b97f4a7c15ULL)) >> 11) * 0x1.0p-53;
}

// FNV-1a: a stable hash of a name (std::hash is not stable across libraries).
inline uint64_t hash_name(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace shardlab::util
