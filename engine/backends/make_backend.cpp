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
    if (options.processes)
      throw Error("backend 'cuda': runs over several processes (NCCL between processes) are not built yet; run one "
                  "process per machine with --backend cpu, or one process with the GPU's devices");
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
