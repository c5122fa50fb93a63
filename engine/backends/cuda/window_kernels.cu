// Window kernels (see window_kernels.h): one thread per result element, sums in a fixed order.
#include "engine/backends/cuda/window_kernels.h"

#include "engine/backends/cuda/launch.cuh"

namespace shardlab::backends::cuda {

namespace {

template <class T>
__global__ void patches_kernel(WindowGeometry g, bool pad_lowest, const T* x, T* y) {
  const int64_t n = g.batch * g.oh * g.ow * g.kh * g.kw * g.c;
  FOR_EACH(e, n) {
    int64_t r = e;
    const int64_t ch = r % g.c; r /= g.c;
    const int64_t kx = r % g.kw; r /= g.kw;
    const int64_t ky = r % g.kh; r /= g.kh;
    const int64_t ox = r % g.ow; r /= g.ow;
    const int64_t oy = r % g.oh, b = r / g.oh;
    const int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dilation_h, ix = ox * g.stride_w - g.pad_left + kx * g.dilation_w;
    if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) y[e] = T(pad_lowest ? -INFINITY : 0.f);
    else y[e] = x[((b * g.h + iy) * g.w + ix) * g.c + ch];
  }
}

template <class T>
__global__ void patches_grad_kernel(WindowGeometry g, const T* windows, T* y) {
  const int64_t n = g.batch * g.h * g.w * g.c;
  FOR_EACH(e, n) {
    int64_t r = e;
    const int64_t ch = r % g.c; r /= g.c;
    const int64_t ix = r % g.w; r /= g.w;
    const int64_t iy = r % g.h, b = r / g.h;
    float acc = 0.f;
    for (int64_t ky = 0; ky < g.kh; ++ky) {
      const int64_t ty = iy + g.pad_top - ky * g.dilation_h;
      if (ty < 0 || ty % g.stride_h || ty / g.stride_h >= g.oh) continue;
      for (int64_t kx = 0; kx < g.kw; ++kx) {
        const int64_t tx = ix + g.pad_left - kx * g.dilation_w;
        if (tx < 0 || tx % g.stride_w || tx / g.stride_w >= g.ow) continue;
        acc += float(windows[((((b * g.oh + ty / g.stride_h) * g.ow + tx / g.stride_w) * g.kh + ky) * g.kw + kx) * g.c + ch]);
      }
    }
    y[e] = T(acc);
  }
}

template <class T>
__global__ void reduce_max_kernel(int64_t outer, int64_t len, int64_t inner, const T* x, T* y) {
  FOR_EACH(e, outer * inner) {
    const T* xo = x + (e / inner) * len * inner + e % inner;
    float best = -INFINITY;
    for (int64_t l = 0; l < len; ++l) best = fmaxf(best, float(xo[l * inner]));
    y[e] = T(best);
  }
}

template <class T>
__global__ void reduce_max_grad_kernel(int64_t outer, int64_t len, int64_t inner, const T* x, const T* g, T* dx) {
  FOR_EACH(e, outer * inner) {
    const int64_t base = (e / inner) * len * inner + e % inner;
    int64_t best = 0;
    for (int64_t l = 1; l < len; ++l)
      if (float(x[base + l * inner]) > float(x[base + best * inner])) best = l;
    for (int64_t l = 0; l < len; ++l) dx[base + l * inner] = l == best ? g[e] : T(0.f);
  }
}

}  // namespace

template <class T>
void patches(const WindowGeometry& g, bool pad_lowest, const T* x, T* y, cudaStream_t s) {
  const int64_t n = g.batch * g.oh * g.ow * g.kh * g.kw * g.c;
  if (n > 0) patches_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(g, pad_lowest, x, y);
}

template <class T>
void patches_grad(const WindowGeometry& g, const T* windows, T* y, cudaStream_t s) {
  const int64_t n = g.batch * g.h * g.w * g.c;
  if (n > 0) patches_grad_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(g, windows, y);
}

template <class T>
void reduce_max(int64_t outer, int64_t len, int64_t inner, const T* x, T* y, cudaStream_t s) {
  if (outer * inner > 0) reduce_max_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(outer, len, inner, x, y);
}

template <class T>
void reduce_max_grad(int64_t outer, int64_t len, int64_t inner, const T* x, const T* g, T* dx, cudaStream_t s) {
  if (outer * inner > 0) reduce_max_grad_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(outer, len, inner, x, g, dx);
}

#define SHARDLAB_FOR_TYPE(T)                                                                    \
  template void patches<T>(const WindowGeometry&, bool, const T*, T*, cudaStream_t);           \
  template void patches_grad<T>(const WindowGeometry&, const T*, T*, cudaStream_t);            \
  template void reduce_max<T>(int64_t, int64_t, int64_t, const T*, T*, cudaStream_t);          \
  template void reduce_max_grad<T>(int64_t, int64_t, int64_t, const T*, const T*, T*, cudaStream_t);
SHARDLAB_FOR_TYPE(float)
SHARDLAB_FOR_TYPE(bf16)
SHARDLAB_FOR_TYPE(f16)
#undef SHARDLAB_FOR_TYPE

}  // namespace shardlab::backends::cuda
