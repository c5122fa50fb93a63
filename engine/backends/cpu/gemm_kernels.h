// What the dispatcher (gemm.cpp) sees of each SIMD kernel translation unit (gemm_avx2.cpp,
// gemm_avx512.cpp): block sizes and one function that computes a slice of C's columns.
#pragma once

#include <cstdint>

#include "engine/backends/cpu/gemm.h"

namespace shardlab::backends::cpu {

struct GemmProblem {
  bool trans_a, trans_b;
  int64_t m, n, k;
  GemmOperand a, b;
  float* c;
  int64_t ldc;
  Epilogue<float> epilogue;
  MatmulPrecision precision = MatmulPrecision::Highest;
};

struct BlockedKernel {
  const char* name;
  int64_t mr, nr;  // micro-tile of C held in registers
  int64_t kc, mc;  // a packed A block is mc x kc, a packed B slice kc x (columns rounded up to nr)
  // C[:, j0:j0+nc] of the problem, epilogue included. apack holds kc*mc floats, bpack
  // kc*round_up(nc, nr); both 64-byte aligned and owned by the calling thread.
  void (*columns)(const GemmProblem& g, int64_t j0, int64_t nc, float* apack, float* bpack);
};

// Null when the build is not for x86-64 (the translation unit is then empty).
const BlockedKernel* avx2_kernel();
const BlockedKernel* avx512_kernel();

}  // namespace shardlab::backends::cpu
