// Counter-based hashing: random numbers that are pure functions of (key, index), so values never
// depend on evaluation order, threading or sharding.
#pragma once

#include <cstdint>
#include <string_view>

namespace shardlab::util {

// splitmix64's finaliser: a bijective mix of 64 bits.
inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// FNV-1a: a stable hash of a name (std::hash is not stable across libraries).
inline uint64_t hash_name(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

}  // namespace shardlab::util
