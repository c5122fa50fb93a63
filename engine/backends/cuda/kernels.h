// The CUDA backend's own kernels: every primitive but the GEMM (cuBLASLt, gemm.h) and the
// collectives' rendezvous (peer_collectives.h). Plain host functions that enqueue work on a stream;
// the arithmetic follows the CPU kernels (engine/backends/cpu/kernels.cpp) so both backends agree
// within the conformance suite's tolerance, and bit for bit where the CPU sums in a fixed order.
// Shapes arrive as (rows, cols) with cols the last dimension.
//
// Values are float32, bfloat16 or float16 (T: float, bf16, f16; an instruction's operands share
// one, the exceptions said below). Arithmetic is in float32 whatever T, rounding each result once
// to T (to nearest even), as the CPU computes 16-bit values through float32 working copies.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/backends/shard_index.h"

namespace shardlab::backends::cuda {

using backends::ShardIndex;
using bf16 = __nv_bfloat16;
using f16 = __half;

// Elementwise primitives, y[i] from x[i] (and x1[i]); BiasAdd and MulRow read x1[i % cols].
enum class Elementwise : int { Add, Sub, Mul, Scale, Relu, ReluGrad, Gelu, GeluGrad, Tanh, TanhGrad, Sigmoid, SigmoidGrad, Fill, BiasAdd, MulRow };

template <class T>
void elementwise(Elementwise op, int64_t n, const T* x, const T* x1, T* y, float alpha, int64_t cols, cudaStream_t s);
// Convert: y = x rounded to To (to nearest even; float32 from 16-bit is exact).
template <class From, class To>
void convert(int64_t n, const From* x, To* y, cudaStream_t s);
// x rounded to T in place, held in float32 (a product a folded Convert widens: ir/cast_folding.h).
template <class T>
void round_through(int64_t n, float* x, cudaStream_t s);
// y = x / (1 - rate) where counter_uniform(key, i) >= rate, else 0 (the CPU's stream of numbers).
// `where`: the device's block of the whole array, whose global indices key the mask.
template <class T>
void dropout(int64_t n, const T* x, T* y, double rate, uint64_t key, const ShardIndex& where, cudaStream_t s);
// y[c] = sum over rows of x[r, c]. Rows are summed in order in runs of kReduceRun, then the runs'
// sums in order: the same result every run, and many blocks at work on tall matrices (a bias's
// gradient over a large batch). `partial` holds reduce_rows_scratch(rows, cols) floats.
constexpr int64_t kReduceRun = 64;
inline int64_t reduce_rows_scratch(int64_t rows, int64_t cols) {
  return rows > kReduceRun ? (rows + kReduceRun - 1) / kReduceRun * cols : 0;
}
template <class T>
void reduce_rows(int64_t rows, int64_t cols, const T* x, T* y, float* partial, cudaStream_t s);
// dz = dy where x > 0 (ReluGrad) and y = reduce_rows(dz) (a bias's gradient) in one pass over the
// rows, bit for bit what the two give apart. `partial` holds relu_grad_reduce_scratch(rows, cols) floats.
inline int64_t relu_grad_reduce_scratch(int64_t rows, int64_t cols) {
  return rows > kReduceRun ? reduce_rows_scratch(rows, cols) : cols;
}
template <class T>
void relu_grad_reduce_rows(int64_t rows, int64_t cols, const T* x, const T* dy, T* dz, T* y, float* partial, cudaStream_t s);
// Normalises each row (g null) or, with g, its gradient.
template <class T>
void layer_norm(int64_t rows, int64_t cols, const T* x, const T* g, T* y, double eps, cudaStream_t s);
// RMSNorm of each row (g null) or, with g, its gradient.
template <class T>
void rms_norm(int64_t rows, int64_t cols, const T* x, const T* g, T* y, double eps, cudaStream_t s);

// Losses and metrics (float32 predictions: mixed precision converts them first). A label that is not a class index stores its row (the smallest such) in
// *bad_row, which the caller set to kNoBadRow beforehand (cudaMemset of 0x7f bytes) and checks.
// Labels are int32 (as training steps hold them) or float32 whole numbers.
constexpr int kNoBadRow = 0x7f7f7f7f;
struct Labels {
  const void* data = nullptr;
  bool int32 = true;
};
// out[0] = mean over rows of logsumexp(z) - z[label]; row_scratch holds `rows` doubles.
void softmax_xent(int64_t rows, int64_t classes, const float* z, Labels labels, float* out, double* row_scratch,
                  int* bad_row, cudaStream_t s);
// d = (softmax(z) - onehot(label)) * scale[0] / rows; scale is a device scalar (the loss's cotangent).
void softmax_xent_grad(int64_t rows, int64_t classes, const float* z, Labels labels, const float* scale, float* d,
                       int* bad_row, cudaStream_t s);
// out[0] = mean((x - t)^2), summed in double.
void mse(int64_t n, const float* x, const float* t, float* out, cudaStream_t s);
// d = 2 * g[0] / n * (x - t).
void mse_grad(int64_t n, const float* x, const float* t, const float* g, float* d, cudaStream_t s);
// out[0] = fraction of rows whose first largest logit is the label.
void accuracy(int64_t rows, int64_t classes, const float* z, Labels labels, float* out, double* row_scratch,
              int* bad_row, cudaStream_t s);

// Dynamic loss scaling: *count (zeroed first by the caller) += the non-finite elements of x.
template <class T>
void count_non_finite(int64_t n, const T* x, unsigned long long* count, cudaStream_t s);
// y[0] = float(*count).
void store_count(const unsigned long long* count, float* y, cudaStream_t s);

// Optimizer updates in place (Optax's rules, as the CPU's). inv_c1, inv_c2: Adam's bias corrections.
// Under dynamic loss scaling, `skip` is the step's non-finite count (nonzero: the update changes
// nothing) and the gradient is multiplied by `unscale` (1 / the loss scale); else skip is null.
// The parameter and its gradient are T; optimizer state is float32 whatever the parameter.
struct LossScaling {
  const float* skip = nullptr;
  float unscale = 1.f;
};
template <class T>
void sgd(int64_t n, T* p, const T* g, float* trace, float momentum, bool nesterov, float lr, LossScaling ls,
         cudaStream_t s);
template <class T>
void adam(int64_t n, T* p, const T* g, float* mu, float* nu, float b1, float b2, float eps, float weight_decay,
          float lr, float inv_c1, float inv_c2, LossScaling ls, cudaStream_t s);

// out[i] = ((src[0][i] + src[1][i]) + src[2][i]) + ...: the collectives' rank-ordered sum, in
// float32 and rounded once for 16-bit T (as collectives.h's sum_in_order_16bit).
constexpr int kMaxRanks = 64;
template <class T>
void sum_ranks(int64_t n, const T* const* src, int ranks, T* out, cudaStream_t s);

}  // namespace shardlab::backends::cuda
