// out = a b + bias into a column range of a wider matrix, in one cuBLASLt call with the bias in
// its epilogue (gemm.hpp, gemm_bias_in_epilogue).
//
// Why: the SO(2) blocks write their GEMM outputs into column ranges of one [E, width] matrix
// (ops.cpp, So2LinearFn), and torch's addmm puts the bias into cuBLASLt's epilogue only for a
// contiguous result. For a column view it first copies the broadcast bias into the view, then
// runs the GEMM with beta = 1: two strided passes over an edge-sized block. On the H200 that made
// the m = 0 block of the first SO(2) linear 3.10 ms instead of 1.89 ms at 4096 diamond atoms
// (doc/performance.md, "Model v2 on one H200").
//
// The same call serves the bf16 mode (gemm_bf16_lt): bf16 operands, an fp32 result written
// straight into its columns, the bias (if any) in the epilogue. torch's mm with out_dtype writes
// a contiguous temporary, which then went into the column view with a strided copy or add:
// non-vectorised passes that took 36 of a 131 ms bf16 step at 4394 bcc Cu atoms on an H100
// (doc/engine.md, "Precision modes").
//
// cuBLASLt is taken from the copy torch loaded (libtorch_cuda.so needs libcublasLt.so.13) through
// dlopen with RTLD_NOLOAD, not linked: the CUDA toolkit's copy can be an older minor version than
// the torch wheel's, and a direct link could make the process, torch included, load that one.
#include "gemm.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <cublasLt.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#endif

namespace edgeframe::impl {

#ifndef KOKKOS_ENABLE_CUDA

bool gemm_bias_in_epilogue(torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) {
  return false;
}

bool gemm_bf16_lt(torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&) { return false; }

#else

namespace {

using torch::Tensor;

// The cuBLASLt entry points used here, resolved once from the loaded library.
struct LtApi {
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  bool ok = false;
};

template <class F>
bool resolve(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  return f != nullptr;
}

const LtApi& lt_api() {
  static const LtApi api = [] {
    LtApi a;
    void* lib = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) return a;  // torch without cuBLASLt 13: addmm stays in charge
    a.ok = resolve(lib, "cublasLtMatmulDescCreate", a.desc_create) &&
           resolve(lib, "cublasLtMatmulDescDestroy", a.desc_destroy) &&
           resolve(lib, "cublasLtMatmulDescSetAttribute", a.desc_set) &&
           resolve(lib, "cublasLtMatrixLayoutCreate", a.layout_create) &&
           resolve(lib, "cublasLtMatrixLayoutDestroy", a.layout_destroy) &&
           resolve(lib, "cublasLtMatmulPreferenceCreate", a.pref_create) &&
           resolve(lib, "cublasLtMatmulPreferenceDestroy", a.pref_destroy) &&
           resolve(lib, "cublasLtMatmulPreferenceSetAttribute", a.pref_set) &&
           resolve(lib, "cublasLtMatmulAlgoGetHeuristic", a.heuristic) && resolve(lib, "cublasLtMatmul", a.matmul);
    return a;
  }();
  return api;
}

// A row-major-or-transposed operand seen by column-major cuBLAS: x [R, C] with one unit stride
// is a stored column-major matrix, either x^T itself (unit column stride: [C, R], ld = row
// stride) or x (unit row stride: [R, C], ld = column stride).
struct Operand {
  bool transposed_storage = false;  // stored as x, not x^T
  std::int64_t ld = 0;
};

bool as_operand(const Tensor& x, Operand& op) {
  const std::int64_t rows = x.size(0), cols = x.size(1);
  if (x.stride(1) == 1 && x.stride(0) >= std::max<std::int64_t>(cols, 1)) {
    op = {false, x.stride(0)};
    return true;
  }
  if (x.stride(0) == 1 && x.stride(1) >= std::max<std::int64_t>(rows, 1)) {
    op = {true, x.stride(1)};
    return true;
  }
  return false;
}

// The largest power of two (at most 256, cuBLASLt's default assumption) dividing the address:
// algorithms that need more are then left out of the heuristic's choice.
std::uint32_t alignment_of(const void* p) {
  const auto address = reinterpret_cast<std::uintptr_t>(p);
  std::uint32_t a = 256;
  while (a > 1 && address % a != 0) a /= 2;
  return a;
}

// Frees the cuBLASLt descriptors of one call on every path out.
struct Descriptors {
  const LtApi& api;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descriptors() {
    if (pref) api.pref_destroy(pref);
    if (c) api.layout_destroy(c);
    if (b) api.layout_destroy(b);
    if (a) api.layout_destroy(a);
    if (op) api.desc_destroy(op);
  }
};

// out (fp32, unit column stride) = a b (+ bias in the epilogue), a and b both of `operands`
// (fp32 or bf16), sums in fp32 (TF32 for fp32 operands where torch's switch says so).
bool lt_matmul(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias, torch::Dtype operands) {
  const bool has_bias = bias.defined();
  if (out.dim() != 2 || a.dim() != 2 || b.dim() != 2 || (has_bias && bias.dim() != 1)) return false;
  if (!out.is_cuda() || out.scalar_type() != torch::kFloat) return false;
  for (const Tensor* t : {&a, &b})
    if (!t->is_cuda() || t->device() != out.device() || t->scalar_type() != operands) return false;
  if (has_bias && (!bias.is_cuda() || bias.device() != out.device() || bias.scalar_type() != torch::kFloat))
    return false;
  const std::int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  if (m == 0 || n == 0 || k == 0 || b.size(0) != k) return false;
  if (has_bias && (bias.size(0) != n || !bias.is_contiguous())) return false;
  if (out.size(0) != m || out.size(1) != n || out.stride(1) != 1 || out.stride(0) < n) return false;
  // The preferences below state A-D's alignments, not the bias': a bias less aligned than 16
  // bytes (a slice) could make the kernel fault instead of the heuristic declining.
  if (has_bias && alignment_of(bias.data_ptr()) < 16) return false;
  Operand op_a, op_b;
  if (!as_operand(a, op_a) || !as_operand(b, op_b)) return false;
  const LtApi& api = lt_api();
  if (!api.ok) return false;

  // Column-major: out^T [n, m] = b^T [n, k] a^T [k, m], the bias one value per row of out^T.
  // b^T is b's storage as it is when b has a unit column stride, else b's storage transposed.
  const cublasOperation_t trans_b = op_b.transposed_storage ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t trans_a = op_a.transposed_storage ? CUBLAS_OP_T : CUBLAS_OP_N;
  // What torch's own GEMMs read (Tf32Switch sets it through the legacy switch, which sets this too).
  const bool tf32 = at::globalContext().float32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL) ==
                    at::Float32Precision::TF32;
  Descriptors d{api};
  const bool bf16 = operands == torch::kBFloat16;
  const cublasComputeType_t compute = tf32 && !bf16 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t ab_type = bf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cublasLtEpilogue_t epilogue = has_bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias_ptr = has_bias ? bias.data_ptr() : nullptr;
  if (api.desc_create(&d.op, compute, CUDA_R_32F) != CUBLAS_STATUS_SUCCESS) return false;
  if (api.desc_set(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans_b, sizeof(trans_b)) != CUBLAS_STATUS_SUCCESS ||
      api.desc_set(d.op, CUBLASLT_MATMUL_DESC_TRANSB, &trans_a, sizeof(trans_a)) != CUBLAS_STATUS_SUCCESS ||
      api.desc_set(d.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)) != CUBLAS_STATUS_SUCCESS)
    return false;
  if (has_bias &&
      api.desc_set(d.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias_ptr, sizeof(bias_ptr)) != CUBLAS_STATUS_SUCCESS)
    return false;
  // Stored shapes: an operand applied transposed is stored as [cols of op, rows of op].
  const bool b_t = op_b.transposed_storage, a_t = op_a.transposed_storage;
  if (api.layout_create(&d.a, ab_type, b_t ? k : n, b_t ? n : k, op_b.ld) != CUBLAS_STATUS_SUCCESS ||
      api.layout_create(&d.b, ab_type, a_t ? m : k, a_t ? k : m, op_a.ld) != CUBLAS_STATUS_SUCCESS ||
      api.layout_create(&d.c, CUDA_R_32F, n, m, out.stride(0)) != CUBLAS_STATUS_SUCCESS)
    return false;

  std::uint64_t workspace_bytes = at::cuda::getCUDABlasLtWorkspaceSize();
  const std::uint32_t align_a = alignment_of(b.data_ptr()), align_b = alignment_of(a.data_ptr()),
                      align_c = alignment_of(out.data_ptr());
  if (api.pref_create(&d.pref) != CUBLAS_STATUS_SUCCESS ||
      api.pref_set(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes, sizeof(workspace_bytes)) !=
          CUBLAS_STATUS_SUCCESS ||
      api.pref_set(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)) !=
          CUBLAS_STATUS_SUCCESS ||
      api.pref_set(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)) !=
          CUBLAS_STATUS_SUCCESS ||
      api.pref_set(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)) !=
          CUBLAS_STATUS_SUCCESS ||
      api.pref_set(d.pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c)) !=
          CUBLAS_STATUS_SUCCESS)
    return false;

  cublasLtHandle_t handle = at::cuda::getCurrentCUDABlasLtHandle();
  cublasLtMatmulHeuristicResult_t found{};
  int n_found = 0;
  if (api.heuristic(handle, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &found, &n_found) != CUBLAS_STATUS_SUCCESS ||
      n_found == 0)
    return false;  // no algorithm for these strides or alignments: addmm does it
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t status = api.matmul(
      handle, d.op, &one, b.data_ptr(), d.a, a.data_ptr(), d.b, &zero, out.data_ptr(), d.c, out.data_ptr(), d.c,
      &found.algo, at::cuda::getCUDABlasLtWorkspace(), workspace_bytes, at::cuda::getCurrentCUDAStream());
  // Past the heuristic a failure is not a shape we could hand back to addmm: it is an error.
  TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "edgeframe: cublasLtMatmul (", bf16 ? "bf16" : "fp32",
              " operands) failed (status ", static_cast<int>(status), ") for [", m, ", ", k, "] x [", k, ", ", n, "]");
  return true;
}

}  // namespace

bool gemm_bias_in_epilogue(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  return bias.defined() && lt_matmul(out, a, b, bias, torch::kFloat);
}

bool gemm_bf16_lt(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  return lt_matmul(out, a, b, bias, torch::kBFloat16);
}

#endif  // KOKKOS_ENABLE_CUDA

}  // namespace edgeframe::impl
