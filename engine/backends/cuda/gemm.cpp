// cuBLASLt is column-major; a row-major C = op(A) op(B) is the column-major C^T = op(B)^T op(A)^T,
// so B is passed as cuBLASLt's A and A as its B, with M and N swapped. The row bias of length N is
// then cuBLASLt's per-row bias of its (N x M) result. The compute type follows the instruction's matmul
// precision: plain FP32 by default, so the results match the CPU's within the conformance tolerance.
#include "engine/backends/cuda/gemm.h"

#include <memory>
#include <string>

#include "engine/backends/cuda/check.h"

namespace shardlab::backends::cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// The largest power of two up to 256 that divides the address: the alignment heuristics may assume.
uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 4 && a % al != 0) al /= 2;
  return al;
}

// What every matrix of a batch, p + i * stride floats, is aligned to.
uint32_t alignment(const void* p, int64_t stride) {
  uint32_t al = alignment(p);
  const auto bytes = uint64_t(stride) * 4;
  while (al > 4 && bytes % al != 0) al /= 2;
  return al;
}

template <class T, class D>
std::unique_ptr<std::remove_pointer_t<T>, D> owned(T p, D d) {
  return std::unique_ptr<std::remove_pointer_t<T>, D>(p, d);
}

cublasComputeType_t compute_type(MatmulPrecision p) {
  switch (p) {
    case MatmulPrecision::Highest: return CUBLAS_COMPUTE_32F;
    case MatmulPrecision::Tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case MatmulPrecision::Bf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
    case MatmulPrecision::F16: return CUBLAS_COMPUTE_32F_FAST_16F;
  }
  return CUBLAS_COMPUTE_32F;
}

}  // namespace

LtGemm::LtGemm() {
  check(cublaslt().create(&handle_), "cublasLtCreate");
  check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc of the GEMM workspace");
  workspace_bytes_ = kWorkspaceBytes;
}

LtGemm::~LtGemm() {
  cudaFree(workspace_);
  cublaslt().destroy(handle_);
}

bool LtGemm::run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                 const float* b, int64_t ldb, float* c, int64_t ldc, const float* bias, bool relu,
                 cudaStream_t stream, MatmulPrecision precision) {
  return run_strided(trans_a, trans_b, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, 1, bias, relu, stream, precision);
}

void LtGemm::run_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                         int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                         int64_t stride_c, int64_t batch, cudaStream_t stream, MatmulPrecision precision) {
  if (batch > 0)
    run_strided(trans_a, trans_b, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, batch, nullptr, false,
                stream, precision);
}

bool LtGemm::run_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                         int64_t stride_a, const float* b, int64_t ldb, int64_t stride_b, float* c, int64_t ldc,
                         int64_t stride_c, int64_t batch, const float* bias, bool relu, cudaStream_t stream,
                         MatmulPrecision precision) {
  const CublasLtLibrary& lt = cublaslt();
  cublasLtMatmulDesc_t op_raw = nullptr;
  check(lt.desc_create(&op_raw, compute_type(precision), CUDA_R_32F), "cublasLtMatmulDescCreate");
  auto op = owned(op_raw, lt.desc_destroy);
  const cublasOperation_t ta = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(lt.desc_set(op.get(), CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "TRANSA");
  check(lt.desc_set(op.get(), CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "TRANSB");
  const bool fused = bias || relu;
  if (fused) {
    const cublasLtEpilogue_t e = bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : CUBLASLT_EPILOGUE_RELU;
    check(lt.desc_set(op.get(), CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)), "EPILOGUE");
    if (bias)
      check(lt.desc_set(op.get(), CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), "BIAS_POINTER");
  }
  // Stored (column-major) shapes: cuBLASLt's A is our B, its B our A, its C our C transposed.
  cublasLtMatrixLayout_t la_raw = nullptr, lb_raw = nullptr, lc_raw = nullptr;
  check(lt.layout_create(&la_raw, CUDA_R_32F, uint64_t(trans_b ? k : n), uint64_t(trans_b ? n : k), ldb),
        "layout of B");
  auto la = owned(la_raw, lt.layout_destroy);
  check(lt.layout_create(&lb_raw, CUDA_R_32F, uint64_t(trans_a ? m : k), uint64_t(trans_a ? k : m), lda),
        "layout of A");
  auto lb = owned(lb_raw, lt.layout_destroy);
  check(lt.layout_create(&lc_raw, CUDA_R_32F, uint64_t(n), uint64_t(m), ldc), "layout of C");
  auto lc = owned(lc_raw, lt.layout_destroy);

  cublasLtMatmulPreference_t pref_raw = nullptr;
  check(lt.pref_create(&pref_raw), "cublasLtMatmulPreferenceCreate");
  auto pref = owned(pref_raw, lt.pref_destroy);
  check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_,
                                             sizeof(workspace_bytes_)),
        "MAX_WORKSPACE_BYTES");
  // The memory plan puts arrays at any float offset; the default preference assumes 256 bytes.
  const uint32_t al_a = alignment(b, stride_b), al_b = alignment(a, stride_a), al_c = alignment(c, stride_c);
  check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a)), "ALIGN_A");
  check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b)), "ALIGN_B");
  check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c)), "ALIGN_C");
  check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c)), "ALIGN_D");

  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t st = lt.heuristic(handle_, op.get(), la.get(), lb.get(), lc.get(), lc.get(),
                                                           pref.get(), 1, &heuristic, &found);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    if (fused) return false;
    throw Error("cuBLASLt: no algorithm for a " + std::to_string(m) + "x" + std::to_string(k) + " @ " +
                std::to_string(k) + "x" + std::to_string(n) + " float32 GEMM (" + matmul_precision_name(precision) + "): " + lt.status_string(st));
  }
  const float alpha = 1.f, beta = 0.f;
  for (int64_t i = 0; i < batch; ++i) {
    const float* ai = a + i * stride_a;
    const float* bi = b + i * stride_b;
    float* ci = c + i * stride_c;
    check(lt.matmul(handle_, op.get(), &alpha, bi, la.get(), ai, lb.get(), &beta, ci, lc.get(), ci, lc.get(),
                    &heuristic.algo, workspace_, workspace_bytes_, stream),
          "cublasLtMatmul");
  }
  return true;
}

}  // namespace shardlab::backends::cuda
