#include "engine/backends/processes.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace shardlab::backends {

std::string broadcast_string(Processes& p, const std::string& s, int root) {
  uint64_t n = s.size();
  p.broadcast(&n, sizeof n, root);
  std::string out = p.rank() == root ? s : std::string(size_t(n), '\0');
  if (n > 0) p.broadcast(out.data(), size_t(n), root);
  return out;
}

std::vector<std::string> all_gather_strings(Processes& p, const std::string& s) {
  const size_t n = size_t(p.size());
  uint64_t mine = s.size();
  std::vector<uint64_t> sizes(n);
  p.all_gather(&mine, sizes.data(), sizeof mine);
  const uint64_t longest = *std::max_element(sizes.begin(), sizes.end());
  std::vector<std::string> out(n);
  if (longest == 0) return out;
  std::string padded = s;
  padded.resize(size_t(longest));
  std::string all(size_t(longest) * n, '\0');
  p.all_gather(padded.data(), all.data(), size_t(longest));
  for (size_t r = 0; r < n; ++r) out[r] = all.substr(r * size_t(longest), size_t(sizes[r]));
  return out;
}

}  // namespace shardlab::backends
