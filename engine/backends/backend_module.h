// Backends built as loadable modules, so a package can leave them out: the CUDA backend is
// libshardlab_backend_cuda.so, in the shardlab-cuda package. A program finds a module in
// $SHARDLAB_BACKEND_DIR, else in ../lib/shardlab/backends beside its own executable
// (/usr/lib/shardlab/backends when installed, build/lib/shardlab/backends in a build tree). The
// interface between a program and a module is C++ (Backend), not a stable ABI: a module of another
// build is refused.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/backends/backend.h"

// The module's two entry points (C names, so dlsym finds them):
//   const char* shardlab_backend_module_build();  the build it belongs to (backend_module_build())
//   shardlab::backends::Backend* shardlab_backend_module_make(const shardlab::backends::BackendOptions*);
// make transfers ownership and throws shardlab::Error as make_backend does.
#define SHARDLAB_BACKEND_MODULE_BUILD_SYMBOL "shardlab_backend_module_build"
#define SHARDLAB_BACKEND_MODULE_MAKE_SYMBOL "shardlab_backend_module_make"

namespace shardlab::backends {

using ModuleBuildFn = const char* (*)();
using ModuleMakeFn = Backend* (*)(const BackendOptions*);

// What a program and a module must agree on: the version and the compiler that built them.
std::string backend_module_build();

// The file name of `kind`'s module: "libshardlab_backend_cuda.so".
std::string backend_module_file(const std::string& kind);

struct ModuleSearch {
  std::string path;                    // the module found, or empty
  std::vector<std::string> looked_in;  // the folders tried, in order
};
ModuleSearch find_backend_module(const std::string& kind);

// Loads the module at `path` (once per process: a module is never unloaded, since its backends'
// code lives in it) and makes its backend. Throws Error naming the file when it cannot be opened,
// lacks an entry point or belongs to another build, and the module's own error when it has no
// device (e.g. "no CUDA GPU found: ...").
std::unique_ptr<Backend> make_module_backend(const std::string& path, const BackendOptions& options);

}  // namespace shardlab::backends
