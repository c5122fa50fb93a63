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


// The largest power of two up to 256 that divides the address: the alignment heuristics may assume.
uint32_t alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t al = 256;
  while (al > 2 && a % al != 0) al /= 2;
  return al;
}

// What every matrix of a batch, p + i * stride elements of `size` bytes, is aligned to.
uint32_t alignment(const void* p, int64_t stride, size_t size) {
  uint32_t al = alignment(p);
  const auto bytes = uint64_t(stride) * size;
  while (al > 2 && bytes % al != 0) al /= 2;
  return al;
}

cudaDataType_t cuda_type(DType d) {
  switch (d) {
    case DType::F32: return CUDA_R_32F;
    case DType::BF16: return CUDA_R_16BF;
    case DType::F16: return CUDA_R_16F;
    default: break;
  }
  throw Error(std::string("internal: no cuBLASLt GEMM on ") + dtype_name(d) + " values");
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

void release(LtGemm::Plan& plan) {
  const CublasLtLibrary& lt = cublaslt();
  if (plan.la) lt.layout_destroy(plan.la);
  if (plan.lb) lt.layout_destroy(plan.lb);
  if (plan.lc) lt.layout_destroy(plan.lc);
  if (plan.op) lt.desc_destroy(plan.op);
  plan = {};
}

}  // namespace

LtGemm::LtGemm() {
  check(cublaslt().create(&handle_), "cublasLtCreate");
  check(cudaMalloc(&workspace_, kWorkspaceBytes), "cudaMalloc of the GEMM workspace");
  workspace_bytes_ = kWorkspaceBytes;
}

LtGemm::~LtGemm() {
  for (auto& [key, plan] : plans_) release(plan);
  cudaFree(workspace_);
  cublaslt().destroy(handle_);
}

bool LtGemm::run(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                 const void* b, int64_t ldb, void* c, int64_t ldc, const void* bias, bool relu,
                 cudaStream_t stream, MatmulPrecision precision, GemmTypes types) {
  return run_strided(trans_a, trans_b, m, n, k, a, lda, 0, b, ldb, 0, c, ldc, 0, 1, bias, relu, stream, precision, types);
}

void LtGemm::run_batched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                         int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, void* c, int64_t ldc,
                         int64_t stride_c, int64_t batch, cudaStream_t stream, MatmulPrecision precision,
                         GemmTypes types) {
  if (batch > 0)
    run_strided(trans_a, trans_b, m, n, k, a, lda, stride_a, b, ldb, stride_b, c, ldc, stride_c, batch, nullptr, false,
                stream, precision, types);
}

bool LtGemm::run_strided(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const void* a, int64_t lda,
                         int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b, void* c, int64_t ldc,
                         int64_t stride_c, int64_t batch, const void* bias, bool relu, cudaStream_t stream,
                         MatmulPrecision precision, GemmTypes types) {
  const CublasLtLibrary& lt = cublaslt();
  if (types.a != types.b)
    throw Error(std::string("internal: a GEMM of ") + dtype_name(types.a) + " by " + dtype_name(types.b) + " operands");
  // 16-bit operands are multiplied as stored; the precision setting rounds float32 ones only.
  const cublasComputeType_t compute = types.a == DType::F32 ? compute_type(precision) : CUBLAS_COMPUTE_32F;
  // The memory plan puts arrays at any element offset; the default preference assumes 256 bytes.
  const uint32_t al_a = alignment(b, stride_b, dtype_size(types.b)), al_b = alignment(a, stride_a, dtype_size(types.a)),
                 al_c = alignment(c, stride_c, dtype_size(types.c));
  const bool fused = bias || relu;
  const PlanKey key{trans_a, trans_b, m, n, k, lda, ldb, ldc, int64_t(types.a), int64_t(types.c), int64_t(types.bias),
                    int64_t(bias != nullptr), relu, int64_t(compute), al_a, al_b, al_c};
  auto [it, fresh] = plans_.try_emplace(key);
  Plan& plan = it->second;
  if (fresh) {
    // Released and removed again if describing it throws, so a later call does not find half a plan.
    struct Drop {
      std::map<PlanKey, Plan>& plans;
      PlanKey key;
      bool done = false;
      ~Drop() {
        if (done) return;
        release(plans.at(key));
        plans.erase(key);
      }
    } drop{plans_, key};
    check(lt.desc_create(&plan.op, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t ta = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, tb = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(lt.desc_set(plan.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)), "TRANSA");
    check(lt.desc_set(plan.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)), "TRANSB");
    if (fused) {
      const cublasLtEpilogue_t e = bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS) : CUBLASLT_EPILOGUE_RELU;
      check(lt.desc_set(plan.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)), "EPILOGUE");
      if (bias) {
        check(lt.desc_set(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), "BIAS_POINTER");
        const cudaDataType_t bt = cuda_type(types.bias);
        check(lt.desc_set(plan.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof(bt)), "BIAS_DATA_TYPE");
      }
    }
    // Stored (column-major) shapes: cuBLASLt's A is our B, its B our A, its C our C transposed.
    check(lt.layout_create(&plan.la, cuda_type(types.b), uint64_t(trans_b ? k : n), uint64_t(trans_b ? n : k), ldb),
          "layout of B");
    check(lt.layout_create(&plan.lb, cuda_type(types.a), uint64_t(trans_a ? m : k), uint64_t(trans_a ? k : m), lda),
          "layout of A");
    check(lt.layout_create(&plan.lc, cuda_type(types.c), uint64_t(n), uint64_t(m), ldc), "layout of C");

    cublasLtMatmulPreference_t pref_raw = nullptr;
    check(lt.pref_create(&pref_raw), "cublasLtMatmulPreferenceCreate");
    auto pref = owned(pref_raw, lt.pref_destroy);
    check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes_, sizeof(workspace_bytes_)),
          "MAX_WORKSPACE_BYTES");
    check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a)), "ALIGN_A");
    check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b)), "ALIGN_B");
    check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c)), "ALIGN_C");
    check(lt.pref_set(pref.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c)), "ALIGN_D");
    cublasLtMatmulHeuristicResult_t heuristic{};
    int found = 0;
    const cublasStatus_t st =
        lt.heuristic(handle_, plan.op, plan.la, plan.lb, plan.lc, plan.lc, pref.get(), 1, &heuristic, &found);
    plan.found = st == CUBLAS_STATUS_SUCCESS && found > 0;
    if (plan.found) plan.algo = heuristic.algo;
    drop.done = plan.found || fused;  // a plain GEMM without an algorithm throws below, every time
    if (!plan.found && !fused)
      throw Error("cuBLASLt: no algorithm for a " + std::to_string(m) + "x" + std::to_string(k) + " @ " +
                  std::to_string(k) + "x" + std::to_string(n) + " " + dtype_name(types.a) + " GEMM (" +
                  (types.a == DType::F32 ? matmul_precision_name(precision) : "float32 accumulation") + ", " +
                  dtype_name(types.c) + " result): " + lt.status_string(st));
  }
  if (!plan.found) return false;  // no algorithm for this epilogue: the caller runs it unfused
  if (bias) check(lt.desc_set(plan.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)), "BIAS_POINTER");
  const float alpha = 1.f, beta = 0.f;
  const auto* a0 = static_cast<const char*>(a);
  const auto* b0 = static_cast<const char*>(b);
  auto* c0 = static_cast<char*>(c);
  for (int64_t i = 0; i < batch; ++i) {
    const void* ai = a0 + size_t(i * stride_a) * dtype_size(types.a);
    const void* bi = b0 + size_t(i * stride_b) * dtype_size(types.b);
    void* ci = c0 + size_t(i * stride_c) * dtype_size(types.c);
    check(lt.matmul(handle_, plan.op, &alpha, bi, plan.la, ai, plan.lb, &beta, ci, plan.lc, ci, plan.lc, &plan.algo, workspace_,
                    workspace_bytes_, stream),
          "cublasLtMatmul");
  }
  return true;
}

}  // namespace shardlab::backends::cuda
