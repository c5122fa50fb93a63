#include "engine/backends/processes.h"

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

}  // namespace shardlab::backends
