// Epilogue fusion as a pass over the program, for every backend: which elementwise instructions
// a GEMM can perform in its final store (bias add, then ReLU; or ReLU's gradient mask), so their
// results are written once. The pass finds the chains; a backend then keeps those its GEMM can do
// (plan::foldable_chains keeps those whose result the memory plan put in the MatMul's own buffer,
// where writing it early is safe; the CUDA backend then keeps those cuBLASLt has an epilogue for).
#pragma once

#include <cstddef>
#include <vector>

#include "engine/ir/program.h"

namespace shardlab::ir {

struct EpilogueChain {
  size_t matmul = 0;           // the MatMul's instruction index
  std::vector<size_t> folded;  // later instructions the GEMM also performs, in program order
  int bias = -1;               // BiasAdd's bias, added to every row
  bool relu = false;           // then max(0, .)
  int mask = -1;               // ReluGrad's activation: keep the product where it is > 0
  int out = -1;                // the chain's final result
};

// MatMul -> BiasAdd [-> Relu] and MatMul -> ReluGrad, where every intermediate result has no
// other reader. Optimizer updates scheduled in between are stepped over when they write nothing
// the folded instruction reads.
std::vector<EpilogueChain> find_epilogue_chains(const Program& p);

}  // namespace shardlab::ir
