// The CUDA backend's shape-moving and attention kernels: Transpose, Softmax (causal too) and its
// gradient, ReduceAxis, Broadcast, Gather and ScatterAdd, as the CPU's kernels.cpp computes them.
// (BatchMatMul is cuBLASLt's: LtGemm::run_batched.) Plain host functions that enqueue work on a
// stream, on values of T (float, bf16, f16: kernels.h), computing in float32; none of them writes
// a result before it has read what that result overwrites, so Softmax over its operand and
// SoftmaxGrad over its cotangent (the memory plan's in-place pairs) are safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/backends/cuda/kernels.h"

namespace shardlab::backends::cuda {

// Transpose: result dim d is operand dim perm[d] (rank <= kMaxTransposeRank; rank 0 copies one
// element). `dims`: the operand's shape.
constexpr int kMaxTransposeRank = 8;
template <class T>
void transpose(int rank, const int64_t* dims, const int64_t* perm, const T* x, T* y, cudaStream_t s);

// Softmax over rows of `cols` (the last dim). Causal: a row is query q = row % queries of a
// (queries, cols) block and keeps keys 0 .. q + cols - queries (none: the row is all zeros).
template <class T>
void softmax_rows(int64_t rows, int64_t cols, int64_t queries, bool causal, const T* x, T* y, cudaStream_t s);
// dx = y * (g - <g, y>) per row of `cols`.
template <class T>
void softmax_grad_rows(int64_t rows, int64_t cols, const T* y, const T* g, T* dx, cudaStream_t s);

// A shape seen as (outer, len, inner) around one dim. ReduceAxis: y[o, i] = sum over l of
// x[o, l, i], l in order from 0. Broadcast: y[o, l, i] = x[o, i].
template <class T>
void reduce_axis(int64_t outer, int64_t len, int64_t inner, const T* x, T* y, cudaStream_t s);
template <class T>
void broadcast_axis(int64_t outer, int64_t len, int64_t inner, const T* x, T* y, cudaStream_t s);

// Rope over (outer, positions, mid, d): pair (i, i + d/2) at position p turns by
// p * theta^(-2i/d) (by minus that where inverse), the angles in float32 as the CPU computes them.
template <class T>
void rope(int64_t outer, int64_t positions, int64_t mid, int64_t d, double theta, bool inverse, const T* x, T* y, cudaStream_t s);

// Row ids into a table: int32, or whole numbers in float32.
struct RowIds {
  const void* data = nullptr;
  bool int32 = true;
};
// Waits for the stream, then throws Error naming the first of the n ids that is not a row of a
// table of `rows` rows (as the CPU's row_of words it). `bad`: one int of device scratch.
void check_row_ids(int64_t n, RowIds ids, int64_t rows, int* bad, cudaStream_t s);
// y[i, :] = table[ids[i], :] for the n ids; the table has `rows` rows of `width` elements.
template <class T>
void gather_rows(int64_t n, RowIds ids, int64_t rows, int64_t width, const T* table, T* y, cudaStream_t s);
// y (rows x width) = 0, then y[ids[i], :] += g[i, :] for i = 0 .. n - 1 in order, in float32: for
// 16-bit T the sums go to `sums` (rows * width floats), then rounded once into y (float: unused).
template <class T>
void scatter_add_rows(int64_t n, RowIds ids, int64_t rows, int64_t width, const T* g, T* y, float* sums, cudaStream_t s);

}  // namespace shardlab::backends::cuda
