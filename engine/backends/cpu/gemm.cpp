// Float GEMM dispatch: picks, once per process, the fastest kernel the CPU runs (AVX-512, else
// AVX2 + FMA, else Eigen), splits C's columns over the OpenMP threads and hands each thread its own
// pack buffers. Double GEMMs (used by the tests) and the Eigen fallback go through Eigen's product
// plus a separate epilogue pass, on operands widened (and rounded) into float or double copies.
#include "engine/backends/cpu/gemm.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>
#include "engine/backends/cpu/openmp.h"
#include <string>

#include "engine/backends/cpu/gemm_blocked.h"
#include "engine/backends/cpu/gemm_kernels.h"
#include "engine/tensor/convert.h"
#include "engine/util/error.h"

namespace shardlab::backends::cpu {

namespace {

template <class T>
constexpr DType dtype_of_scalar() {
  return std::is_same_v<T, double> ? DType::F64 : DType::F32;
}

template <class T>
void eigen_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
                T* c, int64_t ldc) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<const Mat, 0, Stride> A(a, ta ? k : m, ta ? m : k, Stride(lda));
  Eigen::Map<const Mat, 0, Stride> B(b, tb ? n : k, tb ? k : n, Stride(ldb));
  Eigen::Map<Mat, 0, Stride> C(c, m, n, Stride(ldc));
  if (!ta && !tb) C.noalias() = A * B;
  else if (ta && !tb) C.noalias() = A.transpose() * B;
  else if (!ta) C.noalias() = A * B.transpose();
  else C.noalias() = A.transpose() * B.transpose();
}

// The CPU check runs before any kernel code: the AVX-512 unit is never entered (not even to read
// its kernel table) on a CPU without AVX-512. GCC's check includes the OS's saving of the
// registers (XCR0).
struct Cpu {
  bool avx2 = false, avx512 = false;
  Cpu() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
#endif
  }
};

const Cpu& cpu() {
  static const Cpu c;
  return c;
}

// The blocked kernel for `kernel`, null for eigen or when this CPU or build lacks it.
const BlockedKernel* blocked(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::avx512: return cpu().avx512 ? avx512_kernel() : nullptr;
    case GemmKernel::avx2: return cpu().avx2 ? avx2_kernel() : nullptr;
    case GemmKernel::eigen: return nullptr;
  }
  return nullptr;
}

// 64-byte aligned, grow-only float storage: one A and one B buffer per thread. thread_local because
// the runtime calls gemm concurrently from several device threads, each with its own OpenMP team.
struct PackBuffer {
  struct Free {
    void operator()(float* p) const { ::operator delete[](p, std::align_val_t(64)); }
  };
  std::unique_ptr<float[], Free> data;
  size_t size = 0;
  float* get(size_t n) {
    if (n > size) {
      data.reset(static_cast<float*>(::operator new[](n * sizeof(float), std::align_val_t(64))));
      size = n;
    }
    return data.get();
  }
};

void blocked_gemm(const BlockedKernel& kernel, const GemmProblem& g) {
  // Split the columns into nr-aligned slices, one per thread; small products stay on one thread.
  const int64_t nr = kernel.nr, panels = (g.n + nr - 1) / nr;
  const int threads = int(std::max<int64_t>(1, std::min<int64_t>(openmp::max_threads(), panels)));
  const bool parallel = threads > 1 && double(g.m) * double(g.n) * double(g.k) >= 1e6;
#pragma omp parallel num_threads(threads) if (parallel)
  {
    const int t = openmp::thread_num(), nt = openmp::num_threads();
    const int64_t first = panels * t / nt, last = panels * (t + 1) / nt;
    const int64_t j0 = first * nr, j1 = std::min(g.n, last * nr);
    if (j1 > j0) {
      thread_local PackBuffer apack, bpack;
      const int64_t nc_padded = (j1 - j0 + nr - 1) / nr * nr;
      kernel.columns(g, j0, j1 - j0, apack.get(size_t(kernel.kc * kernel.mc)), bpack.get(size_t(kernel.kc * nc_padded)));
    }
  }
}

}  // namespace

std::vector<GemmKernel> available_kernels() {
  std::vector<GemmKernel> kernels;
  for (GemmKernel k : {GemmKernel::avx512, GemmKernel::avx2})
    if (blocked(k)) kernels.push_back(k);
  kernels.push_back(GemmKernel::eigen);
  return kernels;
}

const char* kernel_name(GemmKernel kernel) {
  switch (kernel) {
    case GemmKernel::avx512: return "avx512 12x32";
    case GemmKernel::avx2: return "avx2 6x16";
    case GemmKernel::eigen: return "eigen";
  }
  return "unknown";
}

// An operand for Eigen: itself where it already is T (and needs no rounding), else a widened and
// rounded copy in `keep`.
template <class T>
const T* as_eigen_operand(const GemmOperand& x, int64_t rows, int64_t cols, MatmulPrecision precision, std::vector<T>& keep) {
  // float32 operands (held as double by the tests' executor) are rounded as the precision says.
  const bool wide = x.type == DType::F32 || x.type == DType::F64;
  const bool rounds = wide && precision != MatmulPrecision::Highest;
  if (x.type == dtype_of_scalar<T>() && !rounds) return static_cast<const T*>(x.data);
  keep.resize(size_t(rows * x.ld));
  const size_t es = dtype_size(x.type);
  std::vector<float> row(size_t(x.ld));
  for (int64_t r = 0; r < rows; ++r) {
    const void* src = static_cast<const char*>(x.data) + size_t(r * x.ld) * es;
    if (x.type == DType::F64 && !rounds) {
      to_float(src, DType::F64, keep.data() + r * x.ld, size_t(cols));
      continue;
    }
    to_float(src, x.type, row.data(), size_t(cols));
    round_for_matmul(row.data(), size_t(cols), wide ? precision : MatmulPrecision::Highest);
    std::copy_n(row.data(), cols, keep.data() + r * x.ld);
  }
  return keep.data();
}

template <class T>
void eigen_gemm_any(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const GemmOperand& a, const GemmOperand& b, T* c,
                    int64_t ldc, MatmulPrecision precision) {
  thread_local std::vector<T> keep_a, keep_b;
  const T* pa = as_eigen_operand<T>(a, ta ? k : m, ta ? m : k, precision, keep_a);
  const T* pb = as_eigen_operand<T>(b, tb ? n : k, tb ? k : n, precision, keep_b);
  eigen_gemm(ta, tb, m, n, k, pa, a.ld, pb, b.ld, c, ldc);
}

void gemm_with(GemmKernel kernel, bool ta, bool tb, int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, float* c,
               int64_t ldc, const Epilogue<float>& e, MatmulPrecision precision) {
  const BlockedKernel* bk = blocked(kernel);
  if (!bk && kernel != GemmKernel::eigen)
    throw Error(std::string("gemm: kernel '") + kernel_name(kernel) + "' cannot run on this CPU or build; available_kernels() lists those that can");
  if (a.type == DType::F64 || b.type == DType::F64 || a.type == DType::I32 || b.type == DType::I32)
    throw Error("internal: a float GEMM of " + std::string(dtype_name(a.type)) + " and " + dtype_name(b.type) + " operands");
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.f);
    apply_epilogue(e, m, n, 0, 0, c, ldc);
    return;
  }
  if (bk) {
    blocked_gemm(*bk, GemmProblem{ta, tb, m, n, k, a, b, c, ldc, e, precision});
  } else {
    eigen_gemm_any<float>(ta, tb, m, n, k, a, b, c, ldc, precision);
    apply_epilogue(e, m, n, 0, 0, c, ldc);
  }
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, float* c, int64_t ldc,
          const Epilogue<float>& e, MatmulPrecision precision) {
  static const GemmKernel best = available_kernels().front();
  // A product narrower than one register tile in N or K (a 10-class head, its gradient) wastes most
  // of each tile; Eigen's kernels do it 1.5-3x faster (gemm_peak --table on the example shapes).
  const bool narrow = n < 16 || k < 16;
  gemm_with(narrow ? GemmKernel::eigen : best, ta, tb, m, n, k, a, b, c, ldc, e, precision);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, GemmOperand a, GemmOperand b, double* c, int64_t ldc,
          const Epilogue<double>& e, MatmulPrecision precision) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0.0);
  } else {
    eigen_gemm_any<double>(ta, tb, m, n, k, a, b, c, ldc, precision);
  }
  apply_epilogue(e, m, n, 0, 0, c, ldc);
}

const char* gemm_kind() {
  static const char* kind = kernel_name(available_kernels().front());
  return kind;
}

}  // namespace shardlab::backends::cpu
