// The CUDA backend's window kernels for convolution and pooling: Patches, PatchesGrad, ReduceMax
// and ReduceMaxGrad, computing what the CPU's kernels.cpp computes, in the same order. Plain host
// functions that enqueue work on a stream, on values of T (float, bf16, f16: kernels.h).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/backends/cuda/kernels.h"

namespace shardlab::backends::cuda {

// An image (batch, h, w, c) and its windows (batch, oh, ow, kh, kw, c): per spatial dim the
// stride, dilation and padding before it (top, left), as ir::Attrs holds them.
struct WindowGeometry {
  int64_t batch = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0;
};

// y = every window of x; padding reads 0, or -inf where pad_lowest (max pooling).
template <class T>
void patches(const WindowGeometry& g, bool pad_lowest, const T* x, T* y, cudaStream_t s);
// y (the image) = the sum of the window elements that copied each element, over (ky, kx) in order.
template <class T>
void patches_grad(const WindowGeometry& g, const T* windows, T* y, cudaStream_t s);
// A shape seen as (outer, len, inner) around one dim: y[o, i] = max over l of x[o, l, i];
// dx[o, l, i] = g[o, i] where l is the first largest x[o, :, i], else 0.
template <class T>
void reduce_max(int64_t outer, int64_t len, int64_t inner, const T* x, T* y, cudaStream_t s);
template <class T>
void reduce_max_grad(int64_t outer, int64_t len, int64_t inner, const T* x, const T* g, T* dx, cudaStream_t s);

}  // namespace shardlab::backends::cuda
