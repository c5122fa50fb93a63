// The CUDA backend's kernels (see kernels.h). Simple by design: one thread per element, row or
// column, and one block for scalar reductions, each in a fixed order so results repeat run to run.
// Checked on an H200 by the conformance suite and training against the CPU backend.
#include "engine/backends/cuda/kernels.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <type_traits>

#include "engine/backends/cuda/launch.cuh"
#include "engine/util/hash.h"

namespace shardlab::backends::cuda {

namespace {

// Every value is read as float32 and each result rounded once to its storage type.
template <class T>
__device__ __forceinline__ float ld(const T* p, int64_t i) {
  return float(p[i]);
}
template <class T>
__device__ __forceinline__ void st(T* p, int64_t i, float v) {
  p[i] = T(v);
}

__device__ float gelu(float x) {
  const float c = 0.7978845608028654f, k = 0.044715f;
  return 0.5f * x * (1.f + tanhf(c * (x + k * x * x * x)));
}

__device__ float gelu_derivative(float x) {
  const float c = 0.7978845608028654f, k = 0.044715f;
  const float t = tanhf(c * (x + k * x * x * x));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * c * (1.f + 3.f * k * x * x);
}

// Element i of an elementwise primitive, in float32.
template <class T>
__device__ __forceinline__ float elementwise_at(Elementwise op, int64_t i, const T* x, const T* x1, float alpha, int64_t cols) {
  float v = 0.f;
  switch (op) {
      case Elementwise::Add: v = ld(x, i) + ld(x1, i); break;
      case Elementwise::Sub: v = ld(x, i) - ld(x1, i); break;
      case Elementwise::Mul: v = ld(x, i) * ld(x1, i); break;
      case Elementwise::Scale: v = ld(x, i) * alpha; break;
      case Elementwise::Relu: v = ld(x, i) > 0.f ? ld(x, i) : 0.f; break;
      case Elementwise::ReluGrad: v = ld(x, i) > 0.f ? ld(x1, i) : 0.f; break;
      case Elementwise::Gelu: v = gelu(ld(x, i)); break;
      case Elementwise::GeluGrad: v = ld(x1, i) * gelu_derivative(ld(x, i)); break;
      case Elementwise::Tanh: v = tanhf(ld(x, i)); break;
      case Elementwise::TanhGrad: v = ld(x1, i) * (1.f - ld(x, i) * ld(x, i)); break;
      case Elementwise::Sigmoid: v = 1.f / (1.f + expf(-ld(x, i))); break;
      case Elementwise::SigmoidGrad: v = ld(x1, i) * ld(x, i) * (1.f - ld(x, i)); break;
      case Elementwise::Fill: v = alpha; break;
      case Elementwise::BiasAdd: v = ld(x, i) + ld(x1, i % cols); break;
      case Elementwise::MulRow: v = ld(x, i) * ld(x1, i % cols); break;
  }
  return v;
}

template <class T>
__global__ void elementwise_kernel(Elementwise op, int64_t n, const T* x, const T* x1, T* y, float alpha, int64_t cols) {
  FOR_EACH(i, n) st(y, i, elementwise_at(op, i, x, x1, alpha, cols));
}

// The same, 16 bytes (kVec<T> elements) per thread and access: n a multiple of kVec<T>, every
// pointer 16-byte aligned (elementwise() checks). A 16-bit operand read one element per access
// uses a fraction of each memory transaction; this reads whole ones.
template <class T>
constexpr int kVec = int(16 / sizeof(T));

template <class T>
union Pack {
  uint4 raw;
  T v[kVec<T>];
};

template <class T>
__global__ void elementwise_vec_kernel(Elementwise op, int64_t packs, const T* x, const T* x1, T* y, float alpha,
                                       int64_t cols) {
  constexpr int V = kVec<T>;
  const bool row = op == Elementwise::BiasAdd || op == Elementwise::MulRow;  // x1 is a row of cols
  FOR_EACH(p, packs) {
    Pack<T> a, b, out;
    if (x) a.raw = reinterpret_cast<const uint4*>(x)[p];
    if (x1) b.raw = reinterpret_cast<const uint4*>(x1)[row ? (p * V % cols) / V : p];
#pragma unroll
    for (int k = 0; k < V; ++k) out.v[k] = T(elementwise_at(op, k, x ? a.v : nullptr, x1 ? b.v : nullptr, alpha, int64_t(V)));
    reinterpret_cast<uint4*>(y)[p] = out.raw;
  }
}

template <class From, class To>
__global__ void convert_kernel(int64_t n, const From* x, To* y) {
  FOR_EACH(i, n) st(y, i, ld(x, i));
}

// Four elements of T as one access: 16 bytes of float32, 8 of a 16-bit type.
template <class T>
union Quad {
  std::conditional_t<sizeof(T) == 4, uint4, uint2> raw;
  T v[4];
};

// convert_kernel four elements at a time (n a multiple of 4, both arrays aligned to four elements).
template <class From, class To>
__global__ void convert_quad_kernel(int64_t quads, const From* x, To* y) {
  const auto* src = reinterpret_cast<const Quad<From>*>(x);
  auto* dst = reinterpret_cast<Quad<To>*>(y);
  FOR_EACH(q, quads) {
    Quad<From> a;
    a.raw = src[q].raw;
    Quad<To> b;
#pragma unroll
    for (int j = 0; j < 4; ++j) b.v[j] = To(float(a.v[j]));
    dst[q].raw = b.raw;
  }
}

template <class T>
__global__ void round_through_kernel(int64_t n, float* x) {
  FOR_EACH(i, n) x[i] = float(T(x[i]));
}

template <class T>
__global__ void dropout_kernel(int64_t n, const T* x, T* y, double rate, float keep_scale, uint64_t key, ShardIndex where) {
  FOR_EACH(i, n)
  st(y, i, util::counter_uniform(key, uint64_t(global_index(where, i))) >= rate ? ld(x, i) * keep_scale : 0.f);
}

// Column c of rows [blockIdx.y * run, ...) summed in order; y has gridDim.y rows of cols.
template <class In, class Out>
__global__ void reduce_rows_kernel(int64_t rows, int64_t cols, int64_t run, const In* x, Out* y) {
  const int64_t r0 = int64_t(blockIdx.y) * run, r1 = r0 + run < rows ? r0 + run : rows;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    float acc = 0.f;
    for (int64_t r = r0; r < r1; ++r) acc += ld(x, r * cols + c);
    st(y, int64_t(blockIdx.y) * cols + c, acc);
  }
}

// ReluGrad and the ReduceRows after it in one pass: dz = dy where x > 0, and column c of rows
// [blockIdx.y * run, ...) of dz, as stored (rounded to T), summed in order into partial's row
// blockIdx.y: reduce_rows_kernel's first pass over dz without reading it back. Each element is read
// and written by one thread, so dz may be x or dy (the plan may put a result over a dead operand).
template <class T>
__global__ void relu_grad_reduce_rows_kernel(int64_t rows, int64_t cols, int64_t run, const T* x, const T* dy, T* dz,
                                             float* partial) {
  const int64_t r0 = int64_t(blockIdx.y) * run, r1 = r0 + run < rows ? r0 + run : rows;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    float acc = 0.f;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = r * cols + c;
      const T v = T(ld(x, i) > 0.f ? ld(dy, i) : 0.f);
      dz[i] = v;
      acc += float(v);
    }
    partial[int64_t(blockIdx.y) * cols + c] = acc;
  }
}

// The two kernels above with 16 bytes (kVec<T> columns) per thread and access, for rows whose
// length is a multiple of kVec<T> at 16-byte aligned addresses: thread t sums columns [V*p, V*p+V)
// of run t / packs (p = t % packs) over the same rows in the same order, so the sums are bit for bit
// the one-column kernels'. Rows are loaded kRowBatch at a time before any is used or stored: the
// loads are then in flight together, and a store over an operand (dz over x or dy) comes after
// every load of its row.
constexpr int kRowBatch = 8;

template <class In, class Out>
__global__ void reduce_rows_vec_kernel(int64_t rows, int64_t packs, int64_t run, int64_t runs, const In* x, Out* y) {
  constexpr int V = kVec<In>;
  const uint4* src = reinterpret_cast<const uint4*>(x);
  FOR_EACH(t, runs * packs) {
    const int64_t k = t / packs, p = t % packs;
    const int64_t r0 = k * run, r1 = r0 + run < rows ? r0 + run : rows;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0.f;
    for (int64_t r = r0; r < r1; r += kRowBatch) {
      Pack<In> a[kRowBatch];
#pragma unroll
      for (int b = 0; b < kRowBatch; ++b)
        if (r + b < r1) a[b].raw = src[(r + b) * packs + p];
#pragma unroll
      for (int b = 0; b < kRowBatch; ++b)
        if (r + b < r1) {
#pragma unroll
          for (int j = 0; j < V; ++j) acc[j] += float(a[b].v[j]);
        }
    }
    Out* out = y + k * packs * V + p * V;
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = Out(acc[j]);
  }
}

template <class T>
__global__ void relu_grad_reduce_rows_vec_kernel(int64_t rows, int64_t packs, int64_t run, int64_t runs, const T* x,
                                                 const T* dy, T* dz, float* partial) {
  constexpr int V = kVec<T>;
  const uint4* xs = reinterpret_cast<const uint4*>(x);
  const uint4* dys = reinterpret_cast<const uint4*>(dy);
  uint4* dzs = reinterpret_cast<uint4*>(dz);
  FOR_EACH(t, runs * packs) {
    const int64_t k = t / packs, p = t % packs;
    const int64_t r0 = k * run, r1 = r0 + run < rows ? r0 + run : rows;
    float acc[V];
#pragma unroll
    for (int j = 0; j < V; ++j) acc[j] = 0.f;
    for (int64_t r = r0; r < r1; r += kRowBatch) {
      Pack<T> a[kRowBatch], g[kRowBatch];
#pragma unroll
      for (int b = 0; b < kRowBatch; ++b)
        if (r + b < r1) {
          a[b].raw = xs[(r + b) * packs + p];
          g[b].raw = dys[(r + b) * packs + p];
        }
#pragma unroll
      for (int b = 0; b < kRowBatch; ++b)
        if (r + b < r1) {
          Pack<T> o;
#pragma unroll
          for (int j = 0; j < V; ++j) {
            const T v = T(float(a[b].v[j]) > 0.f ? float(g[b].v[j]) : 0.f);
            o.v[j] = v;
            acc[j] += float(v);
          }
          dzs[(r + b) * packs + p] = o.raw;
        }
    }
    float* out = partial + k * packs * V + p * V;
#pragma unroll
    for (int j = 0; j < V; ++j) out[j] = acc[j];
  }
}

// y[c] = the sum of partial[0..runs)[c] (the runs' sums), rounded once to T. A block of kThreads
// sums kWarpCols columns: warp w sums runs w, w + W, w + 2W, ... in order (W warps), then warp 0
// adds the warps' sums in warp order. A fixed order, so the same sums every run, and every warp
// at work where one thread per column would wait on `runs` loads one after another.
constexpr int kWarpCols = 32;

template <class T>
__global__ void sum_runs_kernel(int64_t runs, int64_t cols, const float* partial, T* y) {
  constexpr int W = kThreads / kWarpCols;
  __shared__ float part[W][kWarpCols];
  const int lane = int(threadIdx.x) % kWarpCols, w = int(threadIdx.x) / kWarpCols;
  const int64_t c = int64_t(blockIdx.x) * kWarpCols + lane;
  float acc = 0.f;
  if (c < cols) {
#pragma unroll 4
    for (int64_t r = w; r < runs; r += W) acc += partial[r * cols + c];
  }
  part[w][lane] = acc;
  __syncthreads();
  if (w == 0 && c < cols) {
    float sum = part[0][lane];
    for (int k = 1; k < W; ++k) sum += part[k][lane];
    st(y, c, sum);
  }
}

// One thread per row, the CPU's arithmetic in the CPU's order.
template <class T>
__global__ void layer_norm_kernel(int64_t rows, int64_t n, const T* x, const T* g, T* y, float eps) {
  FOR_EACH(r, rows) {
    const T* xr = x + r * n;
    float mean = 0.f, var = 0.f;
    for (int64_t j = 0; j < n; ++j) mean += ld(xr, j);
    mean /= float(n);
    for (int64_t j = 0; j < n; ++j) var += (ld(xr, j) - mean) * (ld(xr, j) - mean);
    var /= float(n);
    const float rstd = 1.f / sqrtf(var + eps);
    T* yr = y + r * n;
    if (!g) {
      for (int64_t j = 0; j < n; ++j) st(yr, j, (ld(xr, j) - mean) * rstd);
      continue;
    }
    const T* gr = g + r * n;
    float mg = 0.f, mgx = 0.f;
    for (int64_t j = 0; j < n; ++j) {
      const float xh = (ld(xr, j) - mean) * rstd;
      mg += ld(gr, j);
      mgx += ld(gr, j) * xh;
    }
    mg /= float(n);
    mgx /= float(n);
    for (int64_t j = 0; j < n; ++j) st(yr, j, rstd * (ld(gr, j) - mg - (ld(xr, j) - mean) * rstd * mgx));
  }
}

// One thread per row, as the CPU's rms_norm.
template <class T>
__global__ void rms_norm_kernel(int64_t rows, int64_t n, const T* x, const T* g, T* y, float eps) {
  FOR_EACH(r, rows) {
    const T* xr = x + r * n;
    float ms = 0.f;
    for (int64_t j = 0; j < n; ++j) ms += ld(xr, j) * ld(xr, j);
    const float rs = 1.f / sqrtf(ms / float(n) + eps);
    T* yr = y + r * n;
    if (!g) {
      for (int64_t j = 0; j < n; ++j) st(yr, j, ld(xr, j) * rs);
      continue;
    }
    const T* gr = g + r * n;
    float mgx = 0.f;
    for (int64_t j = 0; j < n; ++j) mgx += ld(gr, j) * ld(xr, j);
    mgx /= float(n);
    for (int64_t j = 0; j < n; ++j) st(yr, j, rs * ld(gr, j) - ld(xr, j) * rs * rs * rs * mgx);
  }
}

// The row's label as a class index, or -1 after recording the row in *bad_row.
__device__ int64_t label_at(Labels labels, int64_t r, int64_t classes, int* bad_row) {
  int64_t c = -1;
  if (labels.int32) {
    c = static_cast<const int32_t*>(labels.data)[r];
  } else {
    const float l = static_cast<const float*>(labels.data)[r];
    if (l >= 0.f && l < float(classes) && float(int64_t(l)) == l) c = int64_t(l);
  }
  if (c < 0 || c >= classes) {
    atomicMin(bad_row, int(r));
    return -1;
  }
  return c;
}

// The first index of the row's largest element (std::max_element's choice).
__device__ int64_t argmax(const float* zr, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j)
    if (zr[best] < zr[j]) best = j;
  return best;
}

__global__ void xent_rows_kernel(int64_t rows, int64_t c, const float* z, Labels labels, double* row_loss,
                                 int* bad_row) {
  FOR_EACH(r, rows) {
    const float* zr = z + r * c;
    const float m = zr[argmax(zr, c)];
    float sum = 0.f;
    for (int64_t j = 0; j < c; ++j) sum += expf(zr[j] - m);
    const int64_t l = label_at(labels, r, c, bad_row);
    row_loss[r] = l < 0 ? 0.0 : double(m + logf(sum) - zr[l]);
  }
}

__global__ void xent_grad_kernel(int64_t rows, int64_t c, const float* z, Labels labels, const float* scale_in,
                                 float* d, int* bad_row) {
  FOR_EACH(r, rows) {
    const float scale = scale_in[0] / float(rows);
    const float* zr = z + r * c;
    float* dr = d + r * c;
    const float m = zr[argmax(zr, c)];
    float sum = 0.f;
    for (int64_t j = 0; j < c; ++j) sum += (dr[j] = expf(zr[j] - m));
    for (int64_t j = 0; j < c; ++j) dr[j] = dr[j] / sum * scale;
    const int64_t l = label_at(labels, r, c, bad_row);
    if (l >= 0) dr[l] -= scale;
  }
}

__global__ void hits_kernel(int64_t rows, int64_t c, const float* z, Labels labels, double* hit, int* bad_row) {
  FOR_EACH(r, rows) hit[r] = argmax(z + r * c, c) == label_at(labels, r, c, bad_row) ? 1.0 : 0.0;
}

// One block: out[0] = (sum of v[i], or of (v[i] - t[i])^2 where t is given) / divisor, in double.
// Thread k sums elements k, k + 256, ... in order, then a fixed tree adds the threads' sums.
template <class V>
__global__ void mean_kernel(int64_t n, const V* v, const float* t, double divisor, float* out) {
  __shared__ double part[kThreads];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    // The difference in float, as the CPU computes it.
    const double d = t ? double(float(v[i]) - t[i]) : double(v[i]);
    acc += t ? d * d : d;
  }
  part[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (int(threadIdx.x) < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = float(part[0] / divisor);
}

__global__ void mse_grad_kernel(int64_t n, const float* x, const float* t, const float* g, float* d) {
  FOR_EACH(i, n) d[i] = (2.f * g[0] / float(n)) * (x[i] - t[i]);
}

template <class T>
__global__ void count_non_finite_kernel(int64_t n, const T* x, unsigned long long* count) {
  unsigned long long here = 0;
  FOR_EACH(i, n) here += isfinite(ld(x, i)) ? 0 : 1;
  if (here) atomicAdd(count, here);  // whole numbers: the total is the same in any order
}

__global__ void store_count_kernel(const unsigned long long* count, float* y) { y[0] = float(*count); }

template <class T>
__global__ void sgd_kernel(int64_t n, T* p, const T* g, float* tr, float m, bool nesterov, float lr, LossScaling ls) {
  if (ls.skip && ls.skip[0] != 0.f) return;
  FOR_EACH(i, n) {
    const float gi = ld(g, i) * ls.unscale;
    if (!tr) {
      st(p, i, ld(p, i) + -lr * gi);
    } else if (nesterov) {
      tr[i] = gi + m * tr[i];
      st(p, i, ld(p, i) + -lr * (gi + m * tr[i]));
    } else {
      tr[i] = gi + m * tr[i];
      st(p, i, ld(p, i) + -lr * tr[i]);
    }
  }
}

// One element of Adam's update (Optax's scale_by_adam then the learning rate, AdamW's decay), in
// float32: the scalar and the four-wide kernel share it, so both round alike.
__device__ __forceinline__ float adam_element(float pi, float gi, float& mu, float& nu, float b1, float b2, float eps,
                                              float wd, float lr, float inv_c1, float inv_c2) {
  const float m = b1 * mu + (1.f - b1) * gi;
  const float v = b2 * nu + (1.f - b2) * gi * gi;
  mu = m;
  nu = v;
  return pi + -lr * ((m * inv_c1) / (sqrtf(v * inv_c2) + eps) + wd * pi);
}

template <class T>
__global__ void adam_kernel(int64_t n, T* p, const T* g, float* mu, float* nu, float b1, float b2, float eps, float wd,
                            float lr, float inv_c1, float inv_c2, LossScaling ls) {
  if (ls.skip && ls.skip[0] != 0.f) return;
  FOR_EACH(i, n) st(p, i, adam_element(ld(p, i), ld(g, i) * ls.unscale, mu[i], nu[i], b1, b2, eps, wd, lr, inv_c1, inv_c2));
}

// adam_kernel four elements at a time (n a multiple of 4, every array aligned to four elements):
// a step's largest kernel after the GEMMs, bound by its 28 bytes per float32 parameter.
template <class T>
__global__ void adam_quad_kernel(int64_t quads, T* p, const T* g, float* mu, float* nu, float b1, float b2, float eps,
                                 float wd, float lr, float inv_c1, float inv_c2, LossScaling ls) {
  if (ls.skip && ls.skip[0] != 0.f) return;
  auto* ps = reinterpret_cast<Quad<T>*>(p);
  const auto* gs = reinterpret_cast<const Quad<T>*>(g);
  auto* ms = reinterpret_cast<float4*>(mu);
  auto* vs = reinterpret_cast<float4*>(nu);
  FOR_EACH(q, quads) {
    Quad<T> pq, gq;
    pq.raw = ps[q].raw;
    gq.raw = gs[q].raw;
    float4 m4 = ms[q], v4 = vs[q];
    float m[4] = {m4.x, m4.y, m4.z, m4.w}, v[4] = {v4.x, v4.y, v4.z, v4.w};
#pragma unroll
    for (int j = 0; j < 4; ++j)
      pq.v[j] = T(adam_element(float(pq.v[j]), float(gq.v[j]) * ls.unscale, m[j], v[j], b1, b2, eps, wd, lr, inv_c1, inv_c2));
    ms[q] = make_float4(m[0], m[1], m[2], m[3]);
    vs[q] = make_float4(v[0], v[1], v[2], v[3]);
    ps[q].raw = pq.raw;
  }
}

template <class T>
struct Sources {
  const T* p[kMaxRanks];
};

template <class T>
__global__ void sum_ranks_kernel(int64_t n, Sources<T> src, int ranks, T* out) {
  FOR_EACH(i, n) {
    float acc = ld(src.p[0], i);
    for (int r = 1; r < ranks; ++r) acc += ld(src.p[r], i);
    st(out, i, acc);
  }
}

}  // namespace

template <class T>
void elementwise(Elementwise op, int64_t n, const T* x, const T* x1, T* y, float alpha, int64_t cols, cudaStream_t s) {
  if (n <= 0) return;
  constexpr int V = kVec<T>;
  auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool row = op == Elementwise::BiasAdd || op == Elementwise::MulRow;
  if (n % V == 0 && aligned(x) && aligned(x1) && aligned(y) && (!row || cols % V == 0)) {
    elementwise_vec_kernel<T><<<blocks_for(n / V), kThreads, 0, s>>>(op, n / V, x, x1, y, alpha, cols);
    return;
  }
  elementwise_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(op, n, x, x1, y, alpha, cols);
}

// Whether n elements at each of these addresses take a four-wide kernel.
template <class... P>
static bool quads(int64_t n, const P*... ptrs) {
  return n % 4 == 0 && ((reinterpret_cast<uintptr_t>(ptrs) % (4 * sizeof(P)) == 0) && ...);
}

template <class From, class To>
void convert(int64_t n, const From* x, To* y, cudaStream_t s) {
  if (n <= 0) return;
  if (quads(n, x, y)) convert_quad_kernel<From, To><<<blocks_for(n / 4), kThreads, 0, s>>>(n / 4, x, y);
  else convert_kernel<From, To><<<blocks_for(n), kThreads, 0, s>>>(n, x, y);
}

template <class T>
void round_through(int64_t n, float* x, cudaStream_t s) {
  if (n > 0) round_through_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(n, x);
}

template <class T>
void dropout(int64_t n, const T* x, T* y, double rate, uint64_t key, const ShardIndex& where, cudaStream_t s) {
  if (n > 0) dropout_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(n, x, y, rate, float(1.0 / (1.0 - rate)), key, where);
}

// Blocks of kThreads columns for the column reductions (the grid's x is at most 65535).
static unsigned column_blocks(int64_t cols) {
  return unsigned((cols + kThreads - 1) / kThreads < 65535 ? (cols + kThreads - 1) / kThreads : 65535);
}

// Rows summed in order per partial sum: all of them up to kReduceRun (one pass), else runs of
// kReduceRun, longer where there would be more than the grid's 65535 rows of blocks (fewer partial
// sums than reduce_rows_scratch holds).
static int64_t reduce_run(int64_t rows) {
  return rows <= kReduceRun ? rows : std::max<int64_t>(kReduceRun, (rows + 65534) / 65535);
}

// Whether rows of `cols` T at these addresses take the 16-byte kernels.
template <class T>
static bool vector_rows(int64_t cols, std::initializer_list<const void*> ptrs) {
  for (const void* p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  return cols % kVec<T> == 0;
}

// Threads of the 16-byte column kernels: fewer per block than elementwise kernels, since each
// works through a whole run of rows and a large block count spreads those over every SM.
constexpr int kColumnThreads = 64;

static unsigned column_vec_blocks(int64_t threads) {
  const int64_t b = (threads + kColumnThreads - 1) / kColumnThreads;
  return unsigned(b < 1 ? 1 : b > 65535 * 32 ? 65535 * 32 : b);
}

template <class T>
static void sum_runs(int64_t runs, int64_t cols, const float* partial, T* y, cudaStream_t s) {
  sum_runs_kernel<T><<<unsigned((cols + kWarpCols - 1) / kWarpCols), kThreads, 0, s>>>(runs, cols, partial, y);
}

template <class T>
void reduce_rows(int64_t rows, int64_t cols, const T* x, T* y, float* partial, cudaStream_t s) {
  if (cols <= 0) return;
  const unsigned col_blocks = column_blocks(cols);
  const bool vec = rows > 0 && vector_rows<T>(cols, {x});
  const int64_t packs = cols / kVec<T>;
  if (rows <= kReduceRun) {
    if (vec) reduce_rows_vec_kernel<T, T><<<column_vec_blocks(packs), kColumnThreads, 0, s>>>(rows, packs, rows, 1, x, y);
    else reduce_rows_kernel<T, T><<<dim3(col_blocks, 1), kThreads, 0, s>>>(rows, cols, rows, x, y);
    return;
  }
  const int64_t run = reduce_run(rows), runs = (rows + run - 1) / run;
  if (vec)
    reduce_rows_vec_kernel<T, float><<<column_vec_blocks(runs * packs), kColumnThreads, 0, s>>>(rows, packs, run, runs, x, partial);
  else
    reduce_rows_kernel<T, float><<<dim3(col_blocks, unsigned(runs)), kThreads, 0, s>>>(rows, cols, run, x, partial);
  sum_runs<T>(runs, cols, partial, y, s);
}

template <class T>
void relu_grad_reduce_rows(int64_t rows, int64_t cols, const T* x, const T* dy, T* dz, T* y, float* partial, cudaStream_t s) {
  if (cols <= 0) return;
  if (rows <= 0) return reduce_rows<T>(rows, cols, dz, y, partial, s);  // zeros
  // reduce_rows' runs; where it sums in one pass, the one partial sum is then copied exactly.
  const int64_t run = reduce_run(rows), runs = (rows + run - 1) / run;
  if (vector_rows<T>(cols, {x, dy, dz})) {
    const int64_t packs = cols / kVec<T>;
    relu_grad_reduce_rows_vec_kernel<T><<<column_vec_blocks(runs * packs), kColumnThreads, 0, s>>>(rows, packs, run, runs, x,
                                                                                                    dy, dz, partial);
  } else {
    relu_grad_reduce_rows_kernel<T><<<dim3(column_blocks(cols), unsigned(runs)), kThreads, 0, s>>>(rows, cols, run, x, dy,
                                                                                                   dz, partial);
  }
  sum_runs<T>(runs, cols, partial, y, s);
}

template <class T>
void layer_norm(int64_t rows, int64_t cols, const T* x, const T* g, T* y, double eps, cudaStream_t s) {
  if (rows > 0) layer_norm_kernel<T><<<blocks_for(rows), kThreads, 0, s>>>(rows, cols, x, g, y, float(eps));
}

template <class T>
void rms_norm(int64_t rows, int64_t cols, const T* x, const T* g, T* y, double eps, cudaStream_t s) {
  if (rows > 0) rms_norm_kernel<T><<<blocks_for(rows), kThreads, 0, s>>>(rows, cols, x, g, y, float(eps));
}

void softmax_xent(int64_t rows, int64_t classes, const float* z, Labels labels, float* out, double* row_scratch,
                  int* bad_row, cudaStream_t s) {
  xent_rows_kernel<<<blocks_for(rows), kThreads, 0, s>>>(rows, classes, z, labels, row_scratch, bad_row);
  mean_kernel<double><<<1, kThreads, 0, s>>>(rows, row_scratch, nullptr, double(rows), out);
}

void softmax_xent_grad(int64_t rows, int64_t classes, const float* z, Labels labels, const float* scale, float* d,
                       int* bad_row, cudaStream_t s) {
  xent_grad_kernel<<<blocks_for(rows), kThreads, 0, s>>>(rows, classes, z, labels, scale, d, bad_row);
}

void mse(int64_t n, const float* x, const float* t, float* out, cudaStream_t s) {
  mean_kernel<float><<<1, kThreads, 0, s>>>(n, x, t, double(n), out);
}

void mse_grad(int64_t n, const float* x, const float* t, const float* g, float* d, cudaStream_t s) {
  if (n > 0) mse_grad_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, x, t, g, d);
}

void accuracy(int64_t rows, int64_t classes, const float* z, Labels labels, float* out, double* row_scratch,
              int* bad_row, cudaStream_t s) {
  hits_kernel<<<blocks_for(rows), kThreads, 0, s>>>(rows, classes, z, labels, row_scratch, bad_row);
  mean_kernel<double><<<1, kThreads, 0, s>>>(rows, row_scratch, nullptr, double(rows), out);
}

template <class T>
void count_non_finite(int64_t n, const T* x, unsigned long long* count, cudaStream_t s) {
  if (n > 0) count_non_finite_kernel<T><<<blocks_for(n) < 1024 ? blocks_for(n) : 1024, kThreads, 0, s>>>(n, x, count);
}

void store_count(const unsigned long long* count, float* y, cudaStream_t s) { store_count_kernel<<<1, 1, 0, s>>>(count, y); }

template <class T>
void sgd(int64_t n, T* p, const T* g, float* trace, float momentum, bool nesterov, float lr, LossScaling ls, cudaStream_t s) {
  if (n > 0)
    sgd_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(n, p, g, momentum == 0.f ? nullptr : trace, momentum, nesterov, lr, ls);
}

template <class T>
void adam(int64_t n, T* p, const T* g, float* mu, float* nu, float b1, float b2, float eps, float weight_decay,
          float lr, float inv_c1, float inv_c2, LossScaling ls, cudaStream_t s) {
  if (n <= 0) return;
  if (quads(n, p, g, mu, nu))
    adam_quad_kernel<T><<<blocks_for(n / 4), kThreads, 0, s>>>(n / 4, p, g, mu, nu, b1, b2, eps, weight_decay, lr, inv_c1,
                                                               inv_c2, ls);
  else
    adam_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(n, p, g, mu, nu, b1, b2, eps, weight_decay, lr, inv_c1, inv_c2, ls);
}

template <class T>
void sum_ranks(int64_t n, const T* const* src, int ranks, T* out, cudaStream_t s) {
  Sources<T> srcs{};
  for (int r = 0; r < ranks && r < kMaxRanks; ++r) srcs.p[r] = src[r];
  if (n > 0) sum_ranks_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(n, srcs, ranks, out);
}

// Each typed kernel for every storage type.
#define SHARDLAB_FOR_TYPE(T)                                                                                         \
  template void elementwise<T>(Elementwise, int64_t, const T*, const T*, T*, float, int64_t, cudaStream_t);         \
  template void round_through<T>(int64_t, float*, cudaStream_t);                                                    \
  template void dropout<T>(int64_t, const T*, T*, double, uint64_t, const ShardIndex&, cudaStream_t);               \
  template void reduce_rows<T>(int64_t, int64_t, const T*, T*, float*, cudaStream_t);                               \
  template void relu_grad_reduce_rows<T>(int64_t, int64_t, const T*, const T*, T*, T*, float*, cudaStream_t);       \
  template void layer_norm<T>(int64_t, int64_t, const T*, const T*, T*, double, cudaStream_t);                      \
  template void rms_norm<T>(int64_t, int64_t, const T*, const T*, T*, double, cudaStream_t);                        \
  template void count_non_finite<T>(int64_t, const T*, unsigned long long*, cudaStream_t);                          \
  template void sgd<T>(int64_t, T*, const T*, float*, float, bool, float, LossScaling, cudaStream_t);               \
  template void adam<T>(int64_t, T*, const T*, float*, float*, float, float, float, float, float, float, float,     \
                        LossScaling, cudaStream_t);                                                                 \
  template void sum_ranks<T>(int64_t, const T* const*, int, T*, cudaStream_t);                                      \
  template void convert<T, float>(int64_t, const T*, float*, cudaStream_t);                                         \
  template void convert<T, bf16>(int64_t, const T*, bf16*, cudaStream_t);                                           \
  template void convert<T, f16>(int64_t, const T*, f16*, cudaStream_t);
SHARDLAB_FOR_TYPE(float)
SHARDLAB_FOR_TYPE(bf16)
SHARDLAB_FOR_TYPE(f16)
#undef SHARDLAB_FOR_TYPE

}  // namespace shardlab::backends::cuda
