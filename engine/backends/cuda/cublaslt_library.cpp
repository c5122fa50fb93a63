#include "engine/backends/cuda/cublaslt_library.h"

#include <dlfcn.h>

#include <mutex>
#include <string>

#include "engine/util/error.h"

namespace shardlab::backends::cuda {

namespace {

const std::string kName = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);

template <class F>
void resolve(void* lib, F& f, const char* symbol) {
  f = reinterpret_cast<F>(dlsym(lib, symbol));
  if (!f) throw Error(kName + " has no " + symbol + " (a cuBLASLt older than this build's headers?)");
}

CublasLtLibrary load() {
  void* lib = dlopen(kName.c_str(), RTLD_NOW | RTLD_LOCAL);  // kept open for the process's life
  if (!lib) {
    const char* why = dlerror();
    throw Error("cannot load " + kName + " (cuBLASLt, part of the CUDA toolkit): " + (why ? why : "unknown reason"));
  }
  CublasLtLibrary l{};
  resolve(lib, l.create, "cublasLtCreate");
  resolve(lib, l.destroy, "cublasLtDestroy");
  resolve(lib, l.status_string, "cublasLtGetStatusString");
  resolve(lib, l.desc_create, "cublasLtMatmulDescCreate");
  resolve(lib, l.desc_destroy, "cublasLtMatmulDescDestroy");
  resolve(lib, l.desc_set, "cublasLtMatmulDescSetAttribute");
  resolve(lib, l.layout_create, "cublasLtMatrixLayoutCreate");
  resolve(lib, l.layout_destroy, "cublasLtMatrixLayoutDestroy");
  resolve(lib, l.pref_create, "cublasLtMatmulPreferenceCreate");
  resolve(lib, l.pref_destroy, "cublasLtMatmulPreferenceDestroy");
  resolve(lib, l.pref_set, "cublasLtMatmulPreferenceSetAttribute");
  resolve(lib, l.heuristic, "cublasLtMatmulAlgoGetHeuristic");
  resolve(lib, l.matmul, "cublasLtMatmul");
  return l;
}

}  // namespace

const CublasLtLibrary& cublaslt() {
  // A failed load is retried by the next caller (call_once rethrows and stays unset).
  static std::once_flag once;
  static CublasLtLibrary lib;
  std::call_once(once, [] { lib = load(); });
  return lib;
}

}  // namespace shardlab::backends::cuda
