#include "engine/backends/cpu/kernels.h"
#include "engine/backends/cpu/comm_kernels.h"
#include "engine/backends/cpu/gemm.h"
#include "engine/backends/cpu/openmp.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/ir/primitive.h"
#include "engine/util/error.h"
#include "engine/util/hash.h"

namespace shardlab::backends::cpu {

using ir::Op;

namespace {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapC = Eigen::Map<const RowMat<T>>;
template <class T>
using Map = Eigen::Map<RowMat<T>>;

// Elementwise loops are memory-bound: split them over threads only when big enough to pay off.
constexpr int64_t kParallelMin = 1 << 15;

// Callers pass lambdas that capture by value: pointers captured by reference are re-read from the
// closure on every iteration, which keeps the loop from vectorising.
template <class F>
void for_each(int64_t n, F f) {
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
  for (int64_t i = 0; i < n; ++i) f(i);
}

template <class F>
void for_rows(int64_t rows, int64_t cols, F f) {
#pragma omp parallel for schedule(static) if (rows * cols >= kParallelMin)
  for (int64_t r = 0; r < rows; ++r) f(r);
}

template <class T>
T gelu(T x) {
  const T c = T(0.7978845608028654), k = T(0.044715);
  return T(0.5) * x * (T(1) + std::tanh(c * (x + k * x * x * x)));
}

template <class T>
T gelu_derivative(T x) {
  const T c = T(0.7978845608028654), k = T(0.044715);
  T t = std::tanh(c * (x + k * x * x * x));
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * c * (T(1) + T(3) * k * x * x);
}

// (rows, k) @ (k, cols) with both operands viewed as row-major matrices; see gemm.h.
template <class T>
void matmul(const ir::Instr& ins, const MatmulOperands& x, T* c, const Epilogue<T>& epilogue) {
  const Shape& sa = *x.a_shape;
  const Shape& sb = *x.b_shape;
  const int64_t ra = numel(sa) / sa.back(), ca = sa.back();
  const int64_t rb = numel(sb) / sb.back(), cb = sb.back();
  const bool ta = ins.attrs.trans_a, tb = ins.attrs.trans_b;
  const int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
  gemm(ta, tb, m, n, k, {x.a, x.a_type, ca}, {x.b, x.b_type, cb}, c, n, epilogue, ins.attrs.precision);
}

// One GEMM per index of the leading dims. Many small products (attention's per-head scores) run
// side by side on the threads, each single-threaded; a few large ones each use them all.
template <class T>
void batch_matmul(const ir::Instr& ins, const MatmulOperands& x, T* C) {
  const Shape& sa = *x.a_shape;
  const Shape& sb = *x.b_shape;
  const size_t r = sa.size();
  const bool ta = ins.attrs.trans_a, tb = ins.attrs.trans_b;
  const int64_t m = ta ? sa[r - 1] : sa[r - 2], k = ta ? sa[r - 2] : sa[r - 1], n = tb ? sb[r - 2] : sb[r - 1];
  const int64_t stride_a = sa[r - 2] * sa[r - 1], stride_b = sb[r - 2] * sb[r - 1], batch = numel(sa) / std::max<int64_t>(stride_a, 1);
  const auto* A = static_cast<const char*>(x.a);
  const auto* B = static_cast<const char*>(x.b);
  const size_t ea = dtype_size(x.a_type), eb = dtype_size(x.b_type);
  const bool across = batch >= 2 * openmp::max_threads();
#pragma omp parallel for schedule(static) if (across)
  for (int64_t i = 0; i < batch; ++i)
    gemm(ta, tb, m, n, k, {A + size_t(i * stride_a) * ea, x.a_type, sa[r - 1]}, {B + size_t(i * stride_b) * eb, x.b_type, sb[r - 1]},
         C + i * m * n, n, {}, ins.attrs.precision);
}

// Result dim d is operand dim perm[d]: each output row (last dim) is read with the stride its
// operand dim has.
template <class T>
void transpose(const ir::Attrs& at, const KernelArgs<T>& a) {
  const Shape& s = *a.in_shapes[0];
  const size_t r = s.size();
  if (r == 0) {
    a.out[0][0] = a.in[0][0];
    return;
  }
  std::vector<int64_t> in_stride(r, 1), stride(r), out(r);
  for (size_t d = r - 1; d > 0; --d) in_stride[d - 1] = in_stride[d] * s[d];
  for (size_t d = 0; d < r; ++d) stride[d] = in_stride[size_t(at.perm[d])], out[d] = s[size_t(at.perm[d])];
  const int64_t inner = out[r - 1], step = stride[r - 1], rows = numel(s) / std::max<int64_t>(inner, 1);
  const T* x = a.in[0];
  T* y = a.out[0];
  for_rows(rows, inner, [&](int64_t q) {
    int64_t off = 0, rest = q;
    for (size_t d = r - 1; d-- > 0;) off += (rest % out[d]) * stride[d], rest /= out[d];
    T* yr = y + q * inner;
    for (int64_t j = 0; j < inner; ++j) yr[j] = x[off + j * step];
  });
}

// Over the last dim; a causal row q of a (queries, keys) block keeps keys 0..q + keys - queries
// (the queries are the last of the keys' positions).
// In place is safe: each row is read before it is written.
template <class T>
void softmax(const ir::Attrs& at, const KernelArgs<T>& a) {
  const Shape& s = *a.in_shapes[0];
  const int64_t n = s.back(), rows = numel(s) / n, queries = at.causal ? s[s.size() - 2] : 1;
  const T* x = a.in[0];
  T* y = a.out[0];
  for_rows(rows, n, [&](int64_t row) {
    // A query before every key (more queries than keys) sees none: its row is all zeros.
    const int64_t valid = at.causal ? std::clamp<int64_t>(row % queries + 1 + n - queries, 0, n) : n;
    const T* xr = x + row * n;
    T* yr = y + row * n;
    if (valid == 0) {
      std::fill(yr, yr + n, T(0));
      return;
    }
    T m = *std::max_element(xr, xr + valid), sum = 0;
    for (int64_t j = 0; j < valid; ++j) sum += (yr[j] = std::exp(xr[j] - m));
    const T inv = T(1) / sum;
    for (int64_t j = 0; j < valid; ++j) yr[j] *= inv;
    std::fill(yr + valid, yr + n, T(0));
  });
}

// dx = y * (g - <g, y>) per row, from the softmax's output y; may overwrite g.
template <class T>
void softmax_grad(const KernelArgs<T>& a) {
  const Shape& s = *a.in_shapes[0];
  const int64_t n = s.back(), rows = numel(s) / n;
  for_rows(rows, n, [&](int64_t row) {
    const T* yr = a.in[0] + row * n;
    const T* gr = a.in[1] + row * n;
    T* dr = a.out[0] + row * n;
    T dot = 0;
    for (int64_t j = 0; j < n; ++j) dot += gr[j] * yr[j];
    for (int64_t j = 0; j < n; ++j) dr[j] = yr[j] * (gr[j] - dot);
  });
}

// A shape as (outer, len, inner) around dim d.
struct AroundDim { int64_t outer = 1, len = 1, inner = 1; };
AroundDim around(const Shape& s, int64_t d) {
  AroundDim r;
  for (size_t i = 0; i < s.size(); ++i) (int64_t(i) < d ? r.outer : int64_t(i) == d ? r.len : r.inner) *= s[i];
  return r;
}

template <class T>
void reduce_axis(const ir::Attrs& at, const KernelArgs<T>& a) {
  const AroundDim g = around(*a.in_shapes[0], at.dim);
  const T* x = a.in[0];
  T* y = a.out[0];
  for_rows(g.outer, g.len * g.inner, [&](int64_t o) {
    T* yr = y + o * g.inner;
    std::fill(yr, yr + g.inner, T(0));
    for (int64_t l = 0; l < g.len; ++l) {
      const T* xr = x + (o * g.len + l) * g.inner;
      for (int64_t i = 0; i < g.inner; ++i) yr[i] += xr[i];
    }
  });
}

template <class T>
void broadcast(const ir::Attrs& at, const KernelArgs<T>& a) {
  const AroundDim g = around(*a.out_shapes[0], at.dim);
  const T* x = a.in[0];
  T* y = a.out[0];
  for_rows(g.outer, g.len * g.inner, [&](int64_t o) {
    for (int64_t l = 0; l < g.len; ++l) std::copy(x + o * g.inner, x + (o + 1) * g.inner, y + (o * g.len + l) * g.inner);
  });
}

// An id as a row index of a table of `rows` rows, or an error naming it.
template <class T>
int64_t row_of(const T* ids, int64_t i, int64_t rows) {
  const int64_t id = int64_t(ids[i]);
  if (id < 0 || id >= rows || T(id) != ids[i])
    throw Error("id " + std::to_string(double(ids[i])) + " at position " + std::to_string(i) +
                " is not a row of the table [0, " + std::to_string(rows) + ")");
  return id;
}

template <class T>
void gather(const KernelArgs<T>& a) {
  const Shape& st = *a.in_shapes[0];
  const int64_t rows = st[0], width = numel(st) / std::max<int64_t>(rows, 1), n = numel(*a.in_shapes[1]);
  for (int64_t i = 0; i < n; ++i) {
    const T* src = a.in[0] + row_of(a.in[1], i, rows) * width;
    std::copy(src, src + width, a.out[0] + i * width);
  }
}

template <class T>
void scatter_add(const KernelArgs<T>& a) {
  const Shape& st = *a.out_shapes[0];
  const int64_t rows = st[0], width = numel(st) / std::max<int64_t>(rows, 1), n = numel(*a.in_shapes[0]);
  T* y = a.out[0];
  std::fill(y, y + numel(st), T(0));
  for (int64_t i = 0; i < n; ++i) {
    T* dst = y + row_of(a.in[0], i, rows) * width;
    const T* g = a.in[1] + i * width;
    for (int64_t j = 0; j < width; ++j) dst[j] += g[j];
  }
}

// Patches: every window of the image copied out, (b, oh, ow, kh, kw, c); padding reads 0 or -inf.
template <class T>
void patches(const ir::Attrs& at, const KernelArgs<T>& a) {
  const Shape& xs = *a.in_shapes[0];
  const Shape& ys = *a.out_shapes[0];
  const int64_t h = xs[1], w = xs[2], c = xs[3], oh = ys[1], ow = ys[2], kh = ys[3], kw = ys[4];
  const T pad = at.pad_lowest ? -std::numeric_limits<T>::infinity() : T(0);
  const T* x = a.in[0];
  T* y = a.out[0];
  for_rows(ys[0] * oh, ow * kh * kw * c, [&](int64_t row) {
    const int64_t b = row / oh, oy = row % oh;
    T* out = y + row * ow * kh * kw * c;
    for (int64_t ox = 0; ox < ow; ++ox)
      for (int64_t ky = 0; ky < kh; ++ky) {
        const int64_t iy = oy * at.strides[0] - at.pads[0] + ky * at.dilation[0];
        for (int64_t kx = 0; kx < kw; ++kx, out += c) {
          const int64_t ix = ox * at.strides[1] - at.pads[2] + kx * at.dilation[1];
          if (iy < 0 || iy >= h || ix < 0 || ix >= w) std::fill(out, out + c, pad);
          else std::copy_n(x + ((b * h + iy) * w + ix) * c, c, out);
        }
      }
  });
}

// PatchesGrad: each image element sums the window elements that copied it, over (ky, kx) in
// order, so the result does not depend on the threads (and matches the CUDA kernel's order).
template <class T>
void patches_grad(const ir::Attrs& at, const KernelArgs<T>& a) {
  const Shape& gs = *a.in_shapes[0];
  const Shape& xs = *a.out_shapes[0];
  const int64_t h = xs[1], w = xs[2], c = xs[3], oh = gs[1], ow = gs[2], kh = gs[3], kw = gs[4];
  const T* g = a.in[0];
  T* y = a.out[0];
  for_rows(xs[0] * h, w * c, [&](int64_t row) {
    const int64_t b = row / h, iy = row % h;
    T* out = y + row * w * c;
    std::fill(out, out + w * c, T(0));
    for (int64_t ky = 0; ky < kh; ++ky) {
      const int64_t ty = iy + at.pads[0] - ky * at.dilation[0];  // = oy * stride
      if (ty < 0 || ty % at.strides[0] || ty / at.strides[0] >= oh) continue;
      const int64_t oy = ty / at.strides[0];
      for (int64_t kx = 0; kx < kw; ++kx)
        for (int64_t ix = 0; ix < w; ++ix) {
          const int64_t tx = ix + at.pads[2] - kx * at.dilation[1];
          if (tx < 0 || tx % at.strides[1] || tx / at.strides[1] >= ow) continue;
          const T* src = g + ((((b * oh + oy) * ow + tx / at.strides[1]) * kh + ky) * kw + kx) * c;
          T* dst = out + ix * c;
          for (int64_t k = 0; k < c; ++k) dst[k] += src[k];
        }
    }
  });
}

template <class T>
void reduce_max(const ir::Attrs& at, const KernelArgs<T>& a) {
  const AroundDim g = around(*a.in_shapes[0], at.dim);
  const T* x = a.in[0];
  T* y = a.out[0];
  for_rows(g.outer, g.len * g.inner, [&](int64_t o) {
    T* yr = y + o * g.inner;
    std::fill(yr, yr + g.inner, -std::numeric_limits<T>::infinity());
    for (int64_t l = 0; l < g.len; ++l) {
      const T* xr = x + (o * g.len + l) * g.inner;
      for (int64_t i = 0; i < g.inner; ++i) yr[i] = xr[i] > yr[i] ? xr[i] : yr[i];
    }
  });
}

// ReduceMaxGrad(x, g): g at the first largest x along the dim (XLA's select-and-scatter with >=).
template <class T>
void reduce_max_grad(const ir::Attrs& at, const KernelArgs<T>& a) {
  const AroundDim g = around(*a.in_shapes[0], at.dim);
  const T* x = a.in[0];
  const T* ct = a.in[1];
  T* y = a.out[0];
  for_rows(g.outer, g.len * g.inner, [&](int64_t o) {
    for (int64_t i = 0; i < g.inner; ++i) {
      int64_t best = 0;
      for (int64_t l = 1; l < g.len; ++l)
        if (x[(o * g.len + l) * g.inner + i] > x[(o * g.len + best) * g.inner + i]) best = l;
      for (int64_t l = 0; l < g.len; ++l) y[(o * g.len + l) * g.inner + i] = l == best ? ct[o * g.inner + i] : T(0);
    }
  });
}

template <class T>
void layer_norm(const KernelArgs<T>& a, double eps, bool grad) {
  const Shape& s = *a.in_shapes[0];
  const int64_t n = s.back(), rows = numel(s) / n;
  const T* x = a.in[0];
  const T* g = grad ? a.in[1] : nullptr;
  T* y = a.out[0];
  for_rows(rows, n, [&](int64_t r) {
    const T* xr = x + r * n;
    T mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mean += xr[j];
    mean /= T(n);
    for (int64_t j = 0; j < n; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    var /= T(n);
    const T rstd = T(1) / std::sqrt(var + T(eps));
    T* yr = y + r * n;
    if (!grad) {
      for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mean) * rstd;
      return;
    }
    // dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
    const T* gr = g + r * n;
    T mg = 0, mgx = 0;
    for (int64_t j = 0; j < n; ++j) {
      T xh = (xr[j] - mean) * rstd;
      mg += gr[j];
      mgx += gr[j] * xh;
    }
    mg /= T(n);
    mgx /= T(n);
    for (int64_t j = 0; j < n; ++j) yr[j] = rstd * (gr[j] - mg - (xr[j] - mean) * rstd * mgx);
  });
}

// RMSNorm: y = x * r, r = 1 / sqrt(mean(x^2) + eps); its gradient dx = r * g - x * r^3 * mean(g * x).
template <class T>
void rms_norm(const KernelArgs<T>& a, double eps, bool grad) {
  const Shape& s = *a.in_shapes[0];
  const int64_t n = s.back(), rows = numel(s) / n;
  const T* x = a.in[0];
  const T* g = grad ? a.in[1] : nullptr;
  T* y = a.out[0];
  for_rows(rows, n, [&](int64_t r) {
    const T* xr = x + r * n;
    T ms = 0;
    for (int64_t j = 0; j < n; ++j) ms += xr[j] * xr[j];
    const T rs = T(1) / std::sqrt(ms / T(n) + T(eps));
    T* yr = y + r * n;
    if (!grad) {
      for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] * rs;
      return;
    }
    const T* gr = g + r * n;
    T mgx = 0;
    for (int64_t j = 0; j < n; ++j) mgx += gr[j] * xr[j];
    mgx /= T(n);
    for (int64_t j = 0; j < n; ++j) yr[j] = rs * gr[j] - xr[j] * rs * rs * rs * mgx;
  });
}

// Rope: feature pair (i, i + d/2) of the element at position p turns by p * theta^(-2i/d), the
// angles computed in float32 as transformers computes them.
template <class T>
void rope(const ir::Attrs& at, const KernelArgs<T>& a) {
  const AroundDim g = around(*a.in_shapes[0], at.dim);
  const int64_t d = a.in_shapes[0]->back(), half = d / 2, mid = g.inner / d;
  std::vector<T> cs(size_t(g.len * half)), sn(size_t(g.len * half));
  for (int64_t p = 0; p < g.len; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const float inv_freq = 1.0f / std::pow(float(at.rope_theta), float(2 * i) / float(d));
      const float angle = float(p) * inv_freq;
      cs[size_t(p * half + i)] = T(std::cos(angle));
      sn[size_t(p * half + i)] = T(at.rope_inverse ? -std::sin(angle) : std::sin(angle));
    }
  const T* x = a.in[0];
  T* y = a.out[0];
  for_rows(g.outer * g.len, g.inner, [&](int64_t row) {
    const int64_t p = row % g.len;
    const T* c = cs.data() + p * half;
    const T* sv = sn.data() + p * half;
    for (int64_t m = 0; m < mid; ++m) {
      const T* xv = x + (row * mid + m) * d;
      T* yv = y + (row * mid + m) * d;
      for (int64_t i = 0; i < half; ++i) {
        const T x1 = xv[i], x2 = xv[i + half];
        yv[i] = x1 * c[i] - x2 * sv[i];
        yv[i + half] = x2 * c[i] + x1 * sv[i];
      }
    }
  });
}

template <class T>
int64_t label_at(const T* labels, int64_t r, int64_t classes) {
  const int64_t c = int64_t(labels[r]);
  if (c < 0 || c >= classes || T(c) != labels[r])
    throw Error("label " + std::to_string(double(labels[r])) + " at row " + std::to_string(r) +
                " is not a class index in [0, " + std::to_string(classes) + ")");
  return c;
}

template <class T>
void softmax_xent(const KernelArgs<T>& a, bool grad) {
  const Shape& s = *a.in_shapes[0];
  const int64_t c = s.back(), rows = numel(s) / c;
  const T* z = a.in[0];
  const T* lab = a.in[1];
  if (!grad) {
    double total = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const T* zr = z + r * c;
      T m = *std::max_element(zr, zr + c);
      T sum = 0;
      for (int64_t j = 0; j < c; ++j) sum += std::exp(zr[j] - m);
      total += double(m + std::log(sum) - zr[label_at(lab, r, c)]);
    }
    a.out[0][0] = T(total / double(rows));
    return;
  }
  const T scale = a.in[2][0] / T(rows);
  T* d = a.out[0];
  for (int64_t r = 0; r < rows; ++r) {
    const T* zr = z + r * c;
    T* dr = d + r * c;
    T m = *std::max_element(zr, zr + c);
    T sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += (dr[j] = std::exp(zr[j] - m));
    for (int64_t j = 0; j < c; ++j) dr[j] = dr[j] / sum * scale;
    dr[label_at(lab, r, c)] -= scale;
  }
}

// Under dynamic loss scaling an update whose step overflowed changes nothing (the last operand
// counts the non-finite gradient elements); otherwise its gradient is divided by the loss scale.
template <class T>
bool skipped(const ir::Instr& ins, const KernelArgs<T>& a) {
  return ins.attrs.loss_scaled && a.in.back()[0] != T(0);
}

template <class T>
T unscale(const ir::Instr& ins, const StepContext& ctx) {
  return ins.attrs.loss_scaled ? T(1.0 / ctx.loss_scale) : T(1);
}

template <class T>
void adam(const ir::Instr& ins, const KernelArgs<T>& a, const StepContext& ctx) {
  if (skipped(ins, a)) return;
  const ir::Attrs& at = ins.attrs;
  const UpdateBlock blk = update_block(*a.in_shapes[0], at, ctx.mesh, ctx.device);
  const T gs = unscale<T>(ins, ctx);
  // Optax scale_by_adam: bias correction with the incremented count, eps outside the square root.
  const double t = double(ctx.step + 1);
  const T inv_c1 = T(1.0 / (1.0 - std::pow(at.b1, t))), inv_c2 = T(1.0 / (1.0 - std::pow(at.b2, t)));
  const T b1 = T(at.b1), b2 = T(at.b2), eps = T(at.opt_eps), wd = T(at.weight_decay), lr = T(ctx.learning_rate);
  for (int64_t r = 0; r < blk.runs; ++r) {
    T* __restrict p = a.in_mut[0] + r * blk.stride + blk.offset;
    const T* __restrict g = a.in[1] + r * blk.len;
    T* __restrict mu = a.in_mut[2] + r * blk.len;
    T* __restrict nu = a.in_mut[3] + r * blk.len;
    const int64_t n = blk.len;
    // One pass over parameter, gradient and both moments: the update is memory-bound.
#pragma omp parallel for simd schedule(static) if (n >= kParallelMin)
    for (int64_t i = 0; i < n; ++i) {
      const T gi = g[i] * gs;
      const T m = b1 * mu[i] + (T(1) - b1) * gi;
      const T v = b2 * nu[i] + (T(1) - b2) * gi * gi;
      mu[i] = m;
      nu[i] = v;
      // adamw's decoupled decay is wd * p (wd = 0 for adam)
      p[i] += -lr * ((m * inv_c1) / (std::sqrt(v * inv_c2) + eps) + wd * p[i]);
    }
  }
}

template <class T>
void sgd(const ir::Instr& ins, const KernelArgs<T>& a, const StepContext& ctx) {
  if (skipped(ins, a)) return;
  const UpdateBlock blk = update_block(*a.in_shapes[0], ins.attrs, ctx.mesh, ctx.device);
  const T m = T(ins.attrs.momentum), lr = T(ctx.learning_rate), gs = unscale<T>(ins, ctx);
  const size_t states = a.in.size() - (ins.attrs.loss_scaled ? 3 : 2);
  for (int64_t r = 0; r < blk.runs; ++r) {
    T* p = a.in_mut[0] + r * blk.stride + blk.offset;
    const T* g = a.in[1] + r * blk.len;
    T* tr = states > 0 ? a.in_mut[2] + r * blk.len : nullptr;
    const int64_t n = blk.len;
    if (ins.attrs.momentum == 0.0) {
      for_each(n, [=](int64_t i) { p[i] += -lr * (g[i] * gs); });
    } else if (ins.attrs.nesterov) {  // optax.trace: t = g + m t; update g + m t
      for_each(n, [=](int64_t i) { tr[i] = g[i] * gs + m * tr[i]; p[i] += -lr * (g[i] * gs + m * tr[i]); });
    } else {
      for_each(n, [=](int64_t i) { tr[i] = g[i] * gs + m * tr[i]; p[i] += -lr * tr[i]; });
    }
  }
}

}  // namespace

template <class T>
void run_kernel(const ir::Instr& ins, const KernelArgs<T>& a, const StepContext& ctx) {
  const int64_t n = a.out.empty() ? 0 : numel(*a.out_shapes[0]);
  T* y = a.out.empty() ? nullptr : a.out[0];
  const T* x = a.in.empty() ? nullptr : a.in[0];
  const T* x1 = a.in.size() > 1 ? a.in[1] : nullptr;
  switch (ins.op) {
    case Op::Transpose: transpose(ins.attrs, a); return;
    case Op::Softmax: softmax(ins.attrs, a); return;
    case Op::SoftmaxGrad: softmax_grad(a); return;
    case Op::ReduceAxis: reduce_axis(ins.attrs, a); return;
    case Op::Broadcast: broadcast(ins.attrs, a); return;
    case Op::Gather: gather(a); return;
    case Op::ScatterAdd: scatter_add(a); return;
    case Op::Patches: patches(ins.attrs, a); return;
    case Op::PatchesGrad: patches_grad(ins.attrs, a); return;
    case Op::ReduceMax: reduce_max(ins.attrs, a); return;
    case Op::ReduceMaxGrad: reduce_max_grad(ins.attrs, a); return;
    case Op::Add: for_each(n, [=](int64_t i) { y[i] = x[i] + x1[i]; }); return;
    case Op::Sub: for_each(n, [=](int64_t i) { y[i] = x[i] - x1[i]; }); return;
    case Op::Mul: for_each(n, [=](int64_t i) { y[i] = x[i] * x1[i]; }); return;
    case Op::Scale: {
      const T s = T(ins.attrs.alpha);
      for_each(n, [=](int64_t i) { y[i] = x[i] * s; });
      return;
    }
    case Op::Relu: for_each(n, [=](int64_t i) { y[i] = x[i] > T(0) ? x[i] : T(0); }); return;
    case Op::ReluGrad: for_each(n, [=](int64_t i) { y[i] = x[i] > T(0) ? x1[i] : T(0); }); return;
    case Op::Gelu: for_each(n, [=](int64_t i) { y[i] = gelu(x[i]); }); return;
    case Op::GeluGrad: for_each(n, [=](int64_t i) { y[i] = x1[i] * gelu_derivative(x[i]); }); return;
    case Op::Tanh: for_each(n, [=](int64_t i) { y[i] = std::tanh(x[i]); }); return;
    case Op::TanhGrad: for_each(n, [=](int64_t i) { y[i] = x1[i] * (T(1) - x[i] * x[i]); }); return;
    case Op::Sigmoid: for_each(n, [=](int64_t i) { y[i] = T(1) / (T(1) + std::exp(-x[i])); }); return;
    case Op::SigmoidGrad: for_each(n, [=](int64_t i) { y[i] = x1[i] * x[i] * (T(1) - x[i]); }); return;
    case Op::Dropout: {
      const double rate = ins.attrs.alpha;
      const T keep_scale = T(1.0 / (1.0 - rate));
      const uint64_t key = util::mix64(ins.attrs.seed ^ util::mix64(uint64_t(ctx.step)));
      const ShardIndex where = shard_index(*a.out_shapes[0], ins.attrs, ctx.mesh, ctx.device);
      if (where.rank == 0) {
        for_each(n, [=](int64_t i) { y[i] = util::counter_uniform(key, uint64_t(i)) >= rate ? x[i] * keep_scale : T(0); });
      } else {
        for_each(n, [=](int64_t i) {
          y[i] = util::counter_uniform(key, uint64_t(global_index(where, i))) >= rate ? x[i] * keep_scale : T(0);
        });
      }
      return;
    }
    case Op::BiasAdd:
    case Op::MulRow: {
      const int64_t c = a.in_shapes[0]->back(), rows = n / c;
      const bool add = ins.op == Op::BiasAdd;
      for_rows(rows, c, [&](int64_t r) {
        const T* xr = x + r * c;
        T* yr = y + r * c;
        if (add) for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] + x1[j];
        else for (int64_t j = 0; j < c; ++j) yr[j] = xr[j] * x1[j];
      });
      return;
    }
    case Op::ReduceRows: {
      // Rows are added in order, whatever the buffers' alignment, so results are reproducible.
      const int64_t c = a.in_shapes[0]->back(), rows = numel(*a.in_shapes[0]) / c;
      std::fill(y, y + c, T(0));
      for (int64_t r = 0; r < rows; ++r) {
        const T* xr = x + r * c;
#pragma omp simd
        for (int64_t j = 0; j < c; ++j) y[j] += xr[j];
      }
      return;
    }
    case Op::LayerNorm: layer_norm(a, ins.attrs.eps, false); return;
    case Op::LayerNormGrad: layer_norm(a, ins.attrs.eps, true); return;
    case Op::RmsNorm: rms_norm(a, ins.attrs.eps, false); return;
    case Op::RmsNormGrad: rms_norm(a, ins.attrs.eps, true); return;
    case Op::Rope: rope(ins.attrs, a); return;
    case Op::Reshape:
      if (y != x) std::memcpy(y, x, size_t(n) * sizeof(T));
      return;
    case Op::Stack: {
      const int64_t part = numel(*a.in_shapes[0]);
      // The plan may have made the parts in place (plan_memory): nothing to copy for those.
      for (size_t k = 0; k < a.in.size(); ++k)
        if (y + int64_t(k) * part != a.in[k]) std::memcpy(y + int64_t(k) * part, a.in[k], size_t(part) * sizeof(T));
      return;
    }
    case Op::Unstack: {
      const int64_t part = numel(*a.out_shapes[0]);
      for (size_t k = 0; k < a.out.size(); ++k) std::memcpy(a.out[k], x + int64_t(k) * part, size_t(part) * sizeof(T));
      return;
    }
    case Op::Concat:
    case Op::Split: {
      // Per index of the dims before `dim`, each part is one contiguous run of the whole.
      const bool join = ins.op == Op::Concat;
      const Shape& whole = join ? *a.out_shapes[0] : *a.in_shapes[0];
      const size_t d = size_t(ins.attrs.dim);
      int64_t outer = 1, inner = 1;
      for (size_t i = 0; i < d; ++i) outer *= whole[i];
      for (size_t i = d + 1; i < whole.size(); ++i) inner *= whole[i];
      const int64_t row = whole[d] * inner;
      int64_t at = 0;
      const size_t parts = join ? a.in.size() : a.out.size();
      for (size_t k = 0; k < parts; ++k) {
        const int64_t w = (join ? (*a.in_shapes[k])[d] : (*a.out_shapes[k])[d]) * inner;
        for (int64_t o = 0; o < outer; ++o) {
          if (join) std::memcpy(y + o * row + at, a.in[k] + o * w, size_t(w) * sizeof(T));
          else std::memcpy(a.out[k] + o * w, x + o * row + at, size_t(w) * sizeof(T));
        }
        at += w;
      }
      return;
    }
    case Op::Fill: std::fill(y, y + n, T(ins.attrs.loss_scaled ? ctx.loss_scale : ins.attrs.alpha)); return;
    case Op::CountNonFinite: {
      double bad = 0;
      for (size_t k = 0; k < a.in.size(); k += 2) {
        const T* g = a.in[k];
        const int64_t m = numel(*a.in_shapes[k]);
        int64_t count = 0;
#pragma omp parallel for simd reduction(+ : count) schedule(static) if (m >= kParallelMin)
        for (int64_t i = 0; i < m; ++i) count += std::isfinite(g[i]) ? 0 : 1;
        bad += double(count);
      }
      y[0] = T(bad);
      return;
    }
    case Op::SoftmaxXent: softmax_xent(a, false); return;
    case Op::SoftmaxXentGrad: softmax_xent(a, true); return;
    case Op::Mse: {
      const int64_t m = numel(*a.in_shapes[0]);
      double s = 0;
      for (int64_t i = 0; i < m; ++i) s += double(x[i] - x1[i]) * double(x[i] - x1[i]);
      y[0] = T(s / double(m));
      return;
    }
    case Op::MseGrad: {
      const T k = T(2) * a.in[2][0] / T(n);
      for_each(n, [=](int64_t i) { y[i] = k * (x[i] - x1[i]); });
      return;
    }
    case Op::Accuracy: {
      const int64_t c = a.in_shapes[0]->back(), rows = numel(*a.in_shapes[0]) / c;
      int64_t hits = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const T* zr = x + r * c;
        hits += int64_t(std::max_element(zr, zr + c) - zr) == label_at(x1, r, c);
      }
      y[0] = T(double(hits) / double(rows));
      return;
    }
    case Op::SgdUpdate: sgd(ins, a, ctx); return;
    case Op::AdamUpdate: adam(ins, a, ctx); return;
    case Op::MatMul:
    case Op::BatchMatMul:
    case Op::Convert:
    case Op::AllReduce:
    case Op::AllGather:
    case Op::ReduceScatter:
    case Op::AllToAll:
    case Op::ShardSlice:
    case Op::AllGatherInPlace:
    case Op::Send:
    case Op::Recv:
      break;  // the executor runs these on their operands as stored (run_matmul, run_comm_kernel)
    case Op::kCount: break;
  }
  throw Error(std::string("internal: no CPU kernel for ") + ir::op_name(ins.op));
}

template <class T>
void run_matmul(const ir::Instr& ins, const MatmulOperands& x, T* c, const Epilogue<T>& epilogue) {
  if (ins.op == Op::BatchMatMul) {
    if (!epilogue.empty()) throw Error("internal: an epilogue folded into a batched matmul");
    return batch_matmul(ins, x, c);
  }
  matmul(ins, x, c, epilogue);
}

template void run_matmul<float>(const ir::Instr&, const MatmulOperands&, float*, const Epilogue<float>&);
template void run_matmul<double>(const ir::Instr&, const MatmulOperands&, double*, const Epilogue<double>&);
template void run_kernel<float>(const ir::Instr&, const KernelArgs<float>&, const StepContext&);
template void run_kernel<double>(const ir::Instr&, const KernelArgs<double>&, const StepContext&);

}  // namespace shardlab::backends::cpu
