// cuBLASLt's entry points, loaded on first use rather than linked: libcublasLt is over 500 MB, and
// linking it made every process that links the engine (the CLI, every test) spend about a second
// and 200 MB of memory loading it, GPU or not.
#pragma once

#include <cublasLt.h>

namespace shardlab::backends::cuda {

struct CublasLtLibrary {
  decltype(&cublasLtCreate) create;
  decltype(&cublasLtDestroy) destroy;
  decltype(&cublasLtGetStatusString) status_string;
  decltype(&cublasLtMatmulDescCreate) desc_create;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set;
  decltype(&cublasLtMatrixLayoutCreate) layout_create;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic;
  decltype(&cublasLtMatmul) matmul;
};

// The library of the cuBLAS major version this was built against (libcublasLt.so.13 for CUDA 13),
// loaded once; throws Error naming it and the loader's reason where it cannot be loaded.
const CublasLtLibrary& cublaslt();

}  // namespace shardlab::backends::cuda
