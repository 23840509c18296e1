// Every GEMM of a compute() call goes through these functions (internal to the engine), so that
// the precision mode decides, in one place, how a matrix product is formed:
//   native  torch's GEMM in the step's dtype (fp64, fp32, or fp32 with TF32 tensor cores)
//   bf16    operands rounded to bfloat16, products summed in fp32 (bf16 tensor cores on CUDA)
//   tf32x3  3xTF32: each fp32 operand split into a TF32 head and an fp32 tail, x = hi + lo with
//           hi exact in TF32, and a b = hi_a hi_b + hi_a lo_b + lo_a hi_b in three TF32 GEMMs
//           that accumulate in fp32 (lo_a lo_b, about 2^-22 of the product, is left out): fp32's
//           accuracy from tensor cores
// The mode is process-wide for the duration of one compute() call (GemmScope), like torch's own
// TF32 switch, so that the backward pass, which torch's autograd may run on another thread,
// sees the same mode as the forward.
#pragma once

#include <torch/torch.h>

#include <utility>

#include "evaluator.hpp"

namespace edgeframe::impl {

enum class GemmMode { native, bf16, tf32x3 };

GemmMode gemm_mode();

// cuBLAS' TF32 switch (process-wide in torch) set for the lifetime of one object, then restored.
class Tf32Switch {
 public:
  explicit Tf32Switch(bool on);
  ~Tf32Switch();
  Tf32Switch(const Tf32Switch&) = delete;
  Tf32Switch& operator=(const Tf32Switch&) = delete;

 private:
  bool m_prev;
};

// Sets the GEMM mode and cuBLAS' TF32 switch for one compute() call and restores both after:
// tf32 turns TF32 on; tf32x3 turns it off (its own three GEMMs turn it on around themselves, so
// that nothing else in the step loses fp32's accuracy); the others leave it off.
class GemmScope {
 public:
  explicit GemmScope(Precision precision);
  ~GemmScope();
  GemmScope(const GemmScope&) = delete;
  GemmScope& operator=(const GemmScope&) = delete;

 private:
  GemmMode m_prev_mode;
  Tf32Switch m_tf32;
};

// out = a b (+ bias, broadcast over rows) in the current mode. a [M, K], b [K, N] (any strides,
// e.g. w.t()), out [M, N] of a's dtype (may be a column view of a wider matrix). An a of bf16
// (operands already rounded) takes the bf16 mode's GEMM into an fp32 out, whatever the mode.
void gemm_out(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
              const torch::Tensor& bias = torch::Tensor());
// The same into a new [M, N] tensor of a's dtype (fp32 for a bf16 a).
torch::Tensor gemm(const torch::Tensor& a, const torch::Tensor& b, const torch::Tensor& bias = torch::Tensor());

// out = a b + bias (fp32, tf32 as torch's switch says) in one cuBLASLt call with the bias in its
// epilogue, for an out that is a column range of a wider matrix (a unit column stride): torch's
// addmm does that only for a contiguous out. Returns false, having done nothing, where it does
// not apply (host tensors, other dtypes, strides cuBLASLt takes no algorithm for): the caller
// then uses addmm. gemm_bias_epilogue.cpp says why.
bool gemm_bias_in_epilogue(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                           const torch::Tensor& bias);

// out (fp32, any row stride, unit column stride) = a b (+ bias, optional) for bf16 a and b, sums
// in fp32, in one cuBLASLt call (the bias in its epilogue): the bf16 mode's GEMM, with no
// temporary and no pass after it. false, having done nothing, where it does not apply (as above).
bool gemm_bf16_lt(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                  const torch::Tensor& bias = torch::Tensor());

// out = a b (+ bias) in 3xTF32 by one tensor-core kernel (kokkos/tensor_core_gemm.hpp): each fp32
// operand read once and split in registers, the three products of each 8 k's summed by the tensor
// cores and added to an fp32 running sum rounded to nearest.
// For fp32 CUDA tensors with unit column strides (b: either unit stride), widths and row strides
// multiples of 4, 16-byte aligned; false, having done nothing, elsewhere (host tensors, other
// shapes). The tf32x3 mode (tf32x3_out in gemm.cpp) takes it first and splits from torch ops
// what it declines.
// On devices of compute capability 9.0 the wgmma kernel (kokkos/tensor_core_gemm_wgmma.hpp) runs,
// elsewhere the mma.sync one; `kernel` names one for the tests (wgmma where it cannot run: false).
enum class TensorCoreKernel { automatic, mma_sync, wgmma };
bool gemm_tf32x3_tensor_cores(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                              const torch::Tensor& bias = torch::Tensor(),
                              TensorCoreKernel kernel = TensorCoreKernel::automatic);

// a [..., K] w^T + bias as an autograd op: native mode calls torch's addmm / mm (its own backward); the
// other modes a Function whose backward forms its GEMMs in the same mode.
torch::Tensor gemm_linear(const torch::Tensor& a, const torch::Tensor& w, const torch::Tensor& bias = torch::Tensor());

// The 3xTF32 split of an fp32 tensor: hi = x rounded to the nearest TF32 value (10 explicit
// mantissa bits: the low 13 bits of the fp32 pattern cleared), lo = x - hi, which is exact.
std::pair<torch::Tensor, torch::Tensor> split_tf32(const torch::Tensor& x);

}  // namespace edgeframe::impl
