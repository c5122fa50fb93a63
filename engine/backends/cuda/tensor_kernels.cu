// The shape-moving and attention kernels (see tensor_kernels.h). As kernels.cu: simple by design,
// one thread per result element (one warp per row for the softmaxes), sums in a fixed order so
// results repeat run to run.
#include "engine/backends/cuda/tensor_kernels.h"

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>

#include "engine/backends/cuda/check.h"
#include "engine/backends/cuda/launch.cuh"
#include "engine/util/error.h"

namespace shardlab::backends::cuda {

namespace {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kNoBadId = 0x7f7f7f7f;  // *bad before any id is found wanting (memset of 0x7f bytes)
// ScatterAdd splits the table's rows into at most this many interleaved sets, one per grid row.
constexpr int64_t kScatterBuckets = 128;

// Grid-stride loop of whole warps over rows [0, n): every lane of a warp has the same `row`.
#define FOR_EACH_WARP_ROW(row, n)                                                                 \
  for (int64_t row = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; row < (n); \
       row += int64_t(gridDim.x) * blockDim.x / kWarp)

// Butterfly reductions over a warp. Each step adds a lane's value and its partner's, which both
// lanes compute alike (a + b == b + a), so every lane ends with the same bits.
template <class T>
__device__ __forceinline__ float ld(const T* p, int64_t i) {
  return float(p[i]);
}

__device__ float warp_max(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, o));
  return v;
}

__device__ float warp_sum(float v) {
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

struct TransposeDims {
  int rank = 0;
  int64_t out[kMaxTransposeRank] = {};     // the result's shape
  int64_t stride[kMaxTransposeRank] = {};  // per result dim: the stride of the operand dim it is
};

template <class T>
__global__ void transpose_kernel(int64_t n, TransposeDims t, const T* x, T* y) {
  FOR_EACH(i, n) {
    int64_t rest = i, off = 0;
    for (int d = t.rank - 1; d >= 0; --d) {
      off += (rest % t.out[d]) * t.stride[d];
      rest /= t.out[d];
    }
    y[i] = x[off];
  }
}

// One warp per row; lane l takes the row's elements l, l + 32, ... Each lane reads only its own
// elements and writes them last, after the warp's reductions: y may be x.
template <class T>
__global__ void softmax_kernel(int64_t rows, int64_t n, int64_t queries, bool causal, const T* x, T* y) {
  const int lane = int(threadIdx.x % kWarp);
  FOR_EACH_WARP_ROW(row, rows) {
    int64_t valid = n;
    if (causal) {
      valid = row % queries + 1 + n - queries;
      valid = valid < 0 ? 0 : valid > n ? n : valid;
    }
    const T* xr = x + row * n;
    T* yr = y + row * n;
    float m = -INFINITY;
    for (int64_t j = lane; j < valid; j += kWarp) m = fmaxf(m, ld(xr, j));
    m = warp_max(m);
    float sum = 0.f;
    for (int64_t j = lane; j < valid; j += kWarp) sum += expf(ld(xr, j) - m);
    sum = warp_sum(sum);
    const float inv = valid > 0 ? 1.f / sum : 0.f;
    for (int64_t j = lane; j < n; j += kWarp) yr[j] = T(j < valid ? expf(ld(xr, j) - m) * inv : 0.f);
  }
}

// As softmax_kernel: dx may be g (or y).
template <class T>
__global__ void softmax_grad_kernel(int64_t rows, int64_t n, const T* y, const T* g, T* dx) {
  const int lane = int(threadIdx.x % kWarp);
  FOR_EACH_WARP_ROW(row, rows) {
    const T* yr = y + row * n;
    const T* gr = g + row * n;
    T* dr = dx + row * n;
    float dot = 0.f;
    for (int64_t j = lane; j < n; j += kWarp) dot += ld(gr, j) * ld(yr, j);
    dot = warp_sum(dot);
    for (int64_t j = lane; j < n; j += kWarp) dr[j] = T(ld(yr, j) * (ld(gr, j) - dot));
  }
}

// One thread per result element (o, i), adding x[o, l, i] for l in order (the CPU's order).
template <class T>
__global__ void reduce_axis_kernel(int64_t outer, int64_t len, int64_t inner, const T* x, T* y) {
  FOR_EACH(e, outer * inner) {
    const int64_t o = e / inner, i = e % inner;
    const T* xo = x + o * len * inner + i;
    float acc = 0.f;
    for (int64_t l = 0; l < len; ++l) acc += ld(xo, l * inner);
    y[e] = T(acc);
  }
}

template <class T>
__global__ void broadcast_axis_kernel(int64_t outer, int64_t len, int64_t inner, const T* x, T* y) {
  FOR_EACH(e, outer * len * inner) {
    const int64_t o = e / (len * inner), i = e % inner;
    y[e] = x[o * inner + i];
  }
}

// One thread per feature pair.
template <class T>
__global__ void rope_kernel(int64_t outer, int64_t positions, int64_t mid, int64_t d, float theta, bool inverse, const T* x, T* y) {
  const int64_t half = d / 2;
  FOR_EACH(e, outer * positions * mid * half) {
    const int64_t i = e % half, vec = e / half, p = (vec / mid) % positions;
    const float angle = float(p) * (1.f / powf(theta, float(2 * i) / float(d)));
    const float c = cosf(angle), sn = inverse ? -sinf(angle) : sinf(angle);
    const float x1 = float(x[vec * d + i]), x2 = float(x[vec * d + i + half]);
    y[vec * d + i] = T(x1 * c - x2 * sn);
    y[vec * d + i + half] = T(x2 * c + x1 * sn);
  }
}

// Id i as a row of a table of `rows` rows, or -1 (the CPU's row_of: a whole number in range).
__device__ int64_t row_of(RowIds ids, int64_t i, int64_t rows) {
  if (ids.int32) {
    const int64_t r = static_cast<const int32_t*>(ids.data)[i];
    return r >= 0 && r < rows ? r : -1;
  }
  const float v = static_cast<const float*>(ids.data)[i];
  if (!(v >= 0.f && v < float(rows))) return -1;  // NaN fails too
  const int64_t r = int64_t(v);
  return float(r) == v && r < rows ? r : -1;
}

__global__ void check_ids_kernel(int64_t n, RowIds ids, int64_t rows, int* bad) {
  FOR_EACH(i, n)
    if (row_of(ids, i, rows) < 0) atomicMin(bad, int(i < int64_t(kNoBadId) ? i : int64_t(kNoBadId) - 1));
}

template <class T>
__global__ void gather_kernel(int64_t n, RowIds ids, int64_t rows, int64_t width, const T* table, T* y) {
  FOR_EACH(e, n * width) {
    const int64_t i = e / width, j = e % width;
    const int64_t r = row_of(ids, i, rows);  // checked beforehand (check_row_ids)
    y[e] = r < 0 ? T(0.f) : table[r * width + j];
  }
}

// Grid row b owns the table rows r with r % gridDim.y == b; a thread owns column j of those rows,
// zeroes them, then adds g[i, j] for every id i that falls in them, i in order: each element of
// y has one writer and gets the CPU's sum in the CPU's order. `y` is float32 (for 16-bit rows, the
// float32 sums that scatter_add_rows then rounds once, as the CPU does).
template <class T>
__global__ void scatter_add_kernel(int64_t n, RowIds ids, int64_t rows, int64_t width, const T* g, float* y) {
  const int64_t b = blockIdx.y, buckets = gridDim.y;
  for (int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; j < width; j += int64_t(gridDim.x) * blockDim.x) {
    for (int64_t r = b; r < rows; r += buckets) y[r * width + j] = 0.f;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t r = row_of(ids, i, rows);
      if (r >= 0 && r % buckets == b) y[r * width + j] += ld(g, i * width + j);
    }
  }
}


}  // namespace

template <class T>
void transpose(int rank, const int64_t* dims, const int64_t* perm, const T* x, T* y, cudaStream_t s) {
  if (rank < 0 || rank > kMaxTransposeRank)
    throw Error("the CUDA backend transposes arrays of up to " + std::to_string(kMaxTransposeRank) + " dims, not " +
                std::to_string(rank));
  int64_t in_stride[kMaxTransposeRank];
  int64_t n = 1;
  for (int d = rank - 1; d >= 0; --d) {
    in_stride[d] = n;
    n *= dims[d];
  }
  TransposeDims t;
  t.rank = rank;
  for (int d = 0; d < rank; ++d) {
    t.out[d] = dims[perm[d]];
    t.stride[d] = in_stride[perm[d]];
  }
  if (n > 0) transpose_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(n, t, x, y);
}

template <class T>
void softmax_rows(int64_t rows, int64_t cols, int64_t queries, bool causal, const T* x, T* y, cudaStream_t s) {
  if (rows <= 0 || cols <= 0 || (causal && queries <= 0)) return;
  softmax_kernel<T><<<blocks_for(rows * kWarp), kThreads, 0, s>>>(rows, cols, queries, causal, x, y);
}

template <class T>
void softmax_grad_rows(int64_t rows, int64_t cols, const T* y, const T* g, T* dx, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return;
  softmax_grad_kernel<T><<<blocks_for(rows * kWarp), kThreads, 0, s>>>(rows, cols, y, g, dx);
}

template <class T>
void reduce_axis(int64_t outer, int64_t len, int64_t inner, const T* x, T* y, cudaStream_t s) {
  if (outer * inner > 0) reduce_axis_kernel<T><<<blocks_for(outer * inner), kThreads, 0, s>>>(outer, len, inner, x, y);
}

template <class T>
void broadcast_axis(int64_t outer, int64_t len, int64_t inner, const T* x, T* y, cudaStream_t s) {
  const int64_t n = outer * len * inner;
  if (n > 0) broadcast_axis_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(outer, len, inner, x, y);
}

void check_row_ids(int64_t n, RowIds ids, int64_t rows, int* bad, cudaStream_t s) {
  if (n <= 0) return;
  check(cudaMemsetAsync(bad, 0x7f, sizeof(int), s), "cudaMemsetAsync");
  check_ids_kernel<<<blocks_for(n), kThreads, 0, s>>>(n, ids, rows, bad);
  check(cudaGetLastError(), "checking row ids");
  int at = kNoBadId;
  check(cudaMemcpyAsync(&at, bad, sizeof(int), cudaMemcpyDeviceToHost, s), "row ids");
  check(cudaStreamSynchronize(s), "row ids");
  if (at == kNoBadId) return;
  unsigned char raw[4];
  check(cudaMemcpyAsync(raw, static_cast<const char*>(ids.data) + 4 * int64_t(at), 4, cudaMemcpyDeviceToHost, s), "row ids");
  check(cudaStreamSynchronize(s), "row ids");
  int32_t i = 0;
  float f = 0.f;
  std::memcpy(&i, raw, 4);
  std::memcpy(&f, raw, 4);
  // As the CPU's message, which sees every id as a floating-point number.
  throw Error("id " + std::to_string(ids.int32 ? double(i) : double(f)) + " at position " + std::to_string(at) +
              " is not a row of the table [0, " + std::to_string(rows) + ")");
}

template <class T>
void gather_rows(int64_t n, RowIds ids, int64_t rows, int64_t width, const T* table, T* y, cudaStream_t s) {
  if (n * width > 0) gather_kernel<T><<<blocks_for(n * width), kThreads, 0, s>>>(n, ids, rows, width, table, y);
}

template <class T>
void scatter_add_rows(int64_t n, RowIds ids, int64_t rows, int64_t width, const T* g, T* y, float* sums, cudaStream_t s) {
  if (rows <= 0 || width <= 0) return;
  const int64_t buckets = rows < kScatterBuckets ? rows : kScatterBuckets;
  float* acc = std::is_same_v<T, float> ? reinterpret_cast<float*>(y) : sums;
  scatter_add_kernel<T><<<dim3(blocks_for(width), unsigned(buckets)), kThreads, 0, s>>>(n, ids, rows, width, g, acc);
  if constexpr (!std::is_same_v<T, float>) convert<float, T>(rows * width, acc, y, s);
}

template <class T>
void rope(int64_t outer, int64_t positions, int64_t mid, int64_t d, double theta, bool inverse, const T* x, T* y, cudaStream_t s) {
  const int64_t n = outer * positions * mid * (d / 2);
  if (n > 0) rope_kernel<T><<<blocks_for(n), kThreads, 0, s>>>(outer, positions, mid, d, float(theta), inverse, x, y);
}

#define SHARDLAB_FOR_TYPE(T)                                                                              \
  template void rope<T>(int64_t, int64_t, int64_t, int64_t, double, bool, const T*, T*, cudaStream_t);  \
  template void transpose<T>(int, const int64_t*, const int64_t*, const T*, T*, cudaStream_t);           \
  template void softmax_rows<T>(int64_t, int64_t, int64_t, bool, const T*, T*, cudaStream_t);            \
  template void softmax_grad_rows<T>(int64_t, int64_t, const T*, const T*, T*, cudaStream_t);            \
  template void reduce_axis<T>(int64_t, int64_t, int64_t, const T*, T*, cudaStream_t);                   \
  template void broadcast_axis<T>(int64_t, int64_t, int64_t, const T*, T*, cudaStream_t);                \
  template void gather_rows<T>(int64_t, RowIds, int64_t, int64_t, const T*, T*, cudaStream_t);           \
  template void scatter_add_rows<T>(int64_t, RowIds, int64_t, int64_t, const T*, T*, float*, cudaStream_t);
SHARDLAB_FOR_TYPE(float)
SHARDLAB_FOR_TYPE(bf16)
SHARDLAB_FOR_TYPE(f16)
#undef SHARDLAB_FOR_TYPE

}  // namespace shardlab::backends::cuda
