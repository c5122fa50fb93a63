// The CUDA backend's kernels (see kernels.h). Simple by design: one thread per element, row or
// column, and one block for scalar reductions, each in a fixed order so results repeat run to run.
// Checked on an H200 by the conformance suite and training against the CPU backend.
#include "engine/backends/cuda/kernels.h"

#include <algorithm>
#include <cmath>

#include "engine/backends/cuda/launch.cuh"
#include "engine/util/hash.h"

namespace shardlab::backends::cuda {

namespace {

__device__ float gelu(float x) {
  const float c = 0.7978845608028654f, k = 0.044715f;
  return 0.5f * x * (1.f + tanhf(c * (x + k * x * x * x)));
}

__device__ float gelu_derivative(float x) {
  const float c = 0.7978845608028654f, k = 0.044715f;
  const float t = tanhf(c * (x + k * x * x * x));
  return 0.5f * (1.f + t) + 0.5f * x * (1.f - t * t) * c * (1.f + 3.f * k * x * x);
}

__global__ void elementwise_kernel(Elementwise op, int64_t n, const float* x, const float* x1, float* y, float alpha,
                                   int64_t cols) {
  FOR_EACH(i, n) {
    switch (op) {
      case Elementwise::Add: y[i] = x[i] + x1[i]; break;
      case Elementwise::Sub: y[i] = x[i] - x1[i]; break;
      case Elementwise::Mul: y[i] = x[i] * x1[i]; break;
      case Elementwise::Scale: y[i] = x[i] * alpha; break;
      case Elementwise::Relu: y[i] = x[i] > 0.f ? x[i] : 0.f; break;
      case Elementwise::ReluGrad: y[i] = x[i] > 0.f ? x1[i] : 0.f; break;
      case Elementwise::Gelu: y[i] = gelu(x[i]); break;
      case Elementwise::GeluGrad: y[i] = x1[i] * gelu_derivative(x[i]); break;
      case Elementwise::Tanh: y[i] = tanhf(x[i]); break;
      case Elementwise::TanhGrad: y[i] = x1[i] * (1.f - x[i] * x[i]); break;
      case Elementwise::Fill: y[i] = alpha; break;
      case Elementwise::BiasAdd: y[i] = x[i] + x1[i % cols]; break;
      case Elementwise::MulRow: y[i] = x[i] * x1[i % cols]; break;
    }
  }
}

__global__ void dropout_kernel(int64_t n, const float* x, float* y, double rate, float keep_scale, uint64_t key,
                               ShardIndex where) {
  FOR_EACH(i, n) y[i] = util::counter_uniform(key, uint64_t(global_index(where, i))) >= rate ? x[i] * keep_scale : 0.f;
}

// Column c of rows [blockIdx.y * run, ...) summed in order; y has gridDim.y rows of cols.
__global__ void reduce_rows_kernel(int64_t rows, int64_t cols, int64_t run, const float* x, float* y) {
  const int64_t r0 = int64_t(blockIdx.y) * run, r1 = r0 + run < rows ? r0 + run : rows;
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols; c += int64_t(gridDim.x) * blockDim.x) {
    float acc = 0.f;
    for (int64_t r = r0; r < r1; ++r) acc += x[r * cols + c];
    y[int64_t(blockIdx.y) * cols + c] = acc;
  }
}

// One thread per row, the CPU's arithmetic in the CPU's order.
__global__ void layer_norm_kernel(int64_t rows, int64_t n, const float* x, const float* g, float* y, float eps) {
  FOR_EACH(r, rows) {
    const float* xr = x + r * n;
    float mean = 0.f, var = 0.f;
    for (int64_t j = 0; j < n; ++j) mean += xr[j];
    mean /= float(n);
    for (int64_t j = 0; j < n; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= float(n);
    const float rstd = 1.f / sqrtf(var + eps);
    float* yr = y + r * n;
    if (!g) {
      for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mean) * rstd;
      continue;
    }
    const float* gr = g + r * n;
    float mg = 0.f, mgx = 0.f;
    for (int64_t j = 0; j < n; ++j) {
      const float xh = (xr[j] - mean) * rstd;
      mg += gr[j];
      mgx += gr[j] * xh;
    }
    mg /= float(n);
    mgx /= float(n);
    for (int64_t j = 0; j < n; ++j) yr[j] = rstd * (gr[j] - mg - (xr[j] - mean) * rstd * mgx);
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

__global__ void count_non_finite_kernel(int64_t n, const float* x, unsigned long long* count) {
  unsigned long long here = 0;
  FOR_EACH(i, n) here += isfinite(x[i]) ? 0 : 1;
  if (here) atomicAdd(count, here);  // whole numbers: the total is the same in any order
}

__global__ void store_count_kernel(const unsigned long long* count, float* y) { y[0] = float(*count); }

__global__ void sgd_kernel(int64_t n, float* p, const float* g, float* tr, float m, bool nesterov, float lr,
                           LossScaling ls) {
  if (ls.skip && ls.skip[0] != 0.f) return;
  FOR_EACH(i, n) {
    const float gi = g[i] * ls.unscale;
    if (!tr) {
      p[i] += -lr * gi;
    } else if (nesterov) {
      tr[i] = gi + m * tr[i];
      p[i] += -lr * (gi + m * tr[i]);
    } else {
      tr[i] = gi + m * tr[i];
      p[i] += -lr * tr[i];
    }
  }
}

__global__ void adam_kernel(int64_t n, float* p, const float* g, float* mu, float* nu, float b1, float b2, float eps,
                            float wd, float lr, float inv_c1, float inv_c2, LossScaling ls) {
  if (ls.skip && ls.skip[0] != 0.f) return;
  FOR_EACH(i, n) {
    const float gi = g[i] * ls.unscale;
    const float m = b1 * mu[i] + (1.f - b1) * gi;
    const float v = b2 * nu[i] + (1.f - b2) * gi * gi;
    mu[i] = m;
    nu[i] = v;
    p[i] += -lr * ((m * inv_c1) / (sqrtf(v * inv_c2) + eps) + wd * p[i]);
  }
}

struct Sources {
  const float* p[kMaxRanks];
};

__global__ void sum_ranks_kernel(int64_t n, Sources src, int ranks, float* out) {
  FOR_EACH(i, n) {
    float acc = src.p[0][i];
    for (int r = 1; r < ranks; ++r) acc += src.p[r][i];
    out[i] = acc;
  }
}

}  // namespace

void elementwise(Elementwise op, int64_t n, const float* x, const float* x1, float* y, float alpha, int64_t cols,
                 cudaStream_t s) {
  if (n > 0) elementwise_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, n, x, x1, y, alpha, cols);
}

void dropout(int64_t n, const float* x, float* y, double rate, uint64_t key, const ShardIndex& where, cudaStream_t s) {
  if (n > 0) dropout_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, x, y, rate, float(1.0 / (1.0 - rate)), key, where);
}

void reduce_rows(int64_t rows, int64_t cols, const float* x, float* y, float* partial, cudaStream_t s) {
  if (cols <= 0) return;
  const unsigned col_blocks = unsigned((cols + kThreads - 1) / kThreads < 65535 ? (cols + kThreads - 1) / kThreads : 65535);
  if (rows <= kReduceRun) {
    reduce_rows_kernel<<<dim3(col_blocks, 1), kThreads, 0, s>>>(rows, cols, rows, x, y);
    return;
  }
  // Longer runs where there would be more than the grid's 65535 rows of blocks (fewer partial sums
  // than the scratch holds).
  const int64_t run = std::max<int64_t>(kReduceRun, (rows + 65534) / 65535);
  const int64_t runs = (rows + run - 1) / run;
  reduce_rows_kernel<<<dim3(col_blocks, unsigned(runs)), kThreads, 0, s>>>(rows, cols, run, x, partial);
  reduce_rows_kernel<<<dim3(col_blocks, 1), kThreads, 0, s>>>(runs, cols, runs, partial, y);
}

void layer_norm(int64_t rows, int64_t cols, const float* x, const float* g, float* y, double eps, cudaStream_t s) {
  if (rows > 0) layer_norm_kernel<<<blocks_for(rows), kThreads, 0, s>>>(rows, cols, x, g, y, float(eps));
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

void count_non_finite(int64_t n, const float* x, unsigned long long* count, cudaStream_t s) {
  if (n > 0) count_non_finite_kernel<<<blocks_for(n) < 1024 ? blocks_for(n) : 1024, kThreads, 0, s>>>(n, x, count);
}

void store_count(const unsigned long long* count, float* y, cudaStream_t s) { store_count_kernel<<<1, 1, 0, s>>>(count, y); }

void sgd(int64_t n, float* p, const float* g, float* trace, float momentum, bool nesterov, float lr, LossScaling ls,
         cudaStream_t s) {
  if (n > 0)
    sgd_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, p, g, momentum == 0.f ? nullptr : trace, momentum, nesterov, lr, ls);
}

void adam(int64_t n, float* p, const float* g, float* mu, float* nu, float b1, float b2, float eps, float weight_decay,
          float lr, float inv_c1, float inv_c2, LossScaling ls, cudaStream_t s) {
  if (n > 0)
    adam_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, p, g, mu, nu, b1, b2, eps, weight_decay, lr, inv_c1, inv_c2, ls);
}

void sum_ranks(int64_t n, const float* const* src, int ranks, float* out, cudaStream_t s) {
  Sources srcs{};
  for (int r = 0; r < ranks && r < kMaxRanks; ++r) srcs.p[r] = src[r];
  if (n > 0) sum_ranks_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, srcs, ranks, out);
}

}  // namespace shardlab::backends::cuda
