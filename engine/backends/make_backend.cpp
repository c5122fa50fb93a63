// make_backend and built_backends: the CPU backend is built in; the CUDA backend is a module
// (backend_module.h) that a package may leave out.
#include <algorithm>

#include "engine/backends/backend.h"
#include "engine/backends/backend_module.h"
#include "engine/backends/cpu/cpu_backend.h"
#include "engine/util/error.h"

namespace shardlab::backends {

std::vector<std::string> built_backends() {
  std::vector<std::string> kinds{"cpu"};
#if SHARDLAB_HAVE_CUDA
  if (!find_backend_module("cuda").path.empty()) kinds.push_back("cuda");
#endif
  return kinds;
}

std::unique_ptr<Backend> make_backend(const std::string& kind, const BackendOptions& options) {
  if (kind == "cpu") return cpu::make_cpu_backend(options);
  if (kind == "cuda") {
    // Over several processes the module itself refuses where it was built without NCCL, or where
    // libnccl cannot be loaded (cuda/nccl_collectives.h, require_nccl).
#if SHARDLAB_HAVE_CUDA
    const ModuleSearch found = find_backend_module(kind);
    if (found.path.empty()) {
      std::string where;
      for (const std::string& dir : found.looked_in) where += (where.empty() ? "" : ", ") + dir;
      throw Error("backend 'cuda': the CUDA backend is not installed (no " + backend_module_file(kind) + " in " +
                  (where.empty() ? std::string("any folder") : where) + "); install the shardlab-cuda package");
    }
    return make_module_backend(found.path, options);
#else
    throw Error("backend 'cuda': this build of Shardlab has no CUDA backend (built without CUDA)");
#endif
  }
  std::string have;
  for (const std::string& k : built_backends()) have += (have.empty() ? "" : ", ") + k;
  throw Error("backend '" + kind + "': unknown; this build has: " + have);
}

}  // namespace shardlab::backends
