#include "engine/backends/backend_module.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "engine/util/error.h"

#ifndef SHARDLAB_VERSION
#error "engine/CMakeLists.txt defines SHARDLAB_VERSION for this file"
#endif

namespace shardlab::backends {

namespace fs = std::filesystem;

std::string backend_module_build() { return std::string("Shardlab " SHARDLAB_VERSION ", ") + __VERSION__; }

std::string backend_module_file(const std::string& kind) { return "libshardlab_backend_" + kind + ".so"; }

ModuleSearch find_backend_module(const std::string& kind) {
  ModuleSearch search;
  std::vector<fs::path> dirs;
  if (const char* dir = std::getenv("SHARDLAB_BACKEND_DIR"); dir && *dir) dirs.push_back(dir);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back((exe.parent_path() / ".." / "lib" / "shardlab" / "backends").lexically_normal());
  for (const fs::path& dir : dirs) {
    search.looked_in.push_back(dir.string());
    const fs::path file = dir / backend_module_file(kind);
    if (search.path.empty() && fs::is_regular_file(file, ec)) search.path = file.string();
  }
  return search;
}

std::unique_ptr<Backend> make_module_backend(const std::string& path, const BackendOptions& options) {
  // Loaded modules by path; the handles are kept for the life of the process.
  static std::mutex mutex;
  static std::map<std::string, ModuleMakeFn> loaded;
  ModuleMakeFn make = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto it = loaded.find(path); it != loaded.end()) {
      make = it->second;
    } else {
      // RTLD_LOCAL: the module's copy of the engine's symbols stays its own.
      void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!handle) throw Error("backend module " + path + ": cannot be loaded: " + dlerror());
      auto build = reinterpret_cast<ModuleBuildFn>(dlsym(handle, SHARDLAB_BACKEND_MODULE_BUILD_SYMBOL));
      make = reinterpret_cast<ModuleMakeFn>(dlsym(handle, SHARDLAB_BACKEND_MODULE_MAKE_SYMBOL));
      if (!build || !make) {
        dlclose(handle);
        throw Error("backend module " + path + ": not a Shardlab backend module (it lacks " +
                    (build ? SHARDLAB_BACKEND_MODULE_MAKE_SYMBOL : SHARDLAB_BACKEND_MODULE_BUILD_SYMBOL) + ")");
      }
      const std::string theirs = build(), ours = backend_module_build();
      if (theirs != ours) {
        dlclose(handle);
        throw Error("backend module " + path + ": built for " + theirs + ", but this program is " + ours +
                    "; install the module of the same version");
      }
      loaded[path] = make;
    }
  }
  return std::unique_ptr<Backend>(make(&options));
}

}  // namespace shardlab::backends
