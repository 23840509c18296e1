#include "gemm.hpp"

#include <atomic>
#include <cstdint>
#include <vector>

namespace edgeframe::impl {

namespace {

using torch::Tensor;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

std::atomic<GemmMode> g_mode{GemmMode::native};

GemmMode mode_of(Precision p) {
  return p == Precision::bf16 ? GemmMode::bf16 : p == Precision::tf32x3 ? GemmMode::tf32x3 : GemmMode::native;
}

void native_out(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  if (!bias.defined())
    at::mm_out(out, a, b);
  else if (out.is_contiguous() || !gemm_bias_in_epilogue(out, a, b, bias))
    at::addmm_out(out, bias, a, b);  // contiguous: torch puts the bias into cuBLASLt's epilogue itself
}

// bf16 operands, fp32 sums: CUDA's mm.dtype (bf16 tensor cores, fp32 output); CPU has no such
// kernel, and the same rounded operands in an fp32 GEMM give the same products (a product of
// two bf16 values is exact in fp32), summed in fp32 as well.
void bf16_out(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  const Tensor ab = a.to(torch::kBFloat16), bb = b.to(torch::kBFloat16);
  if (gemm_bf16_lt(out, ab, bb, bias)) return;  // CUDA: straight into out, the bias in the epilogue
  const Tensor p = a.is_cuda() ? at::mm(ab, bb, torch::kFloat) : at::mm(ab.to(torch::kFloat), bb.to(torch::kFloat));
  if (bias.defined())
    at::add_out(out, p, bias);
  else
    out.copy_(p);
}

void tf32x3_out(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  // CUDA: one tensor-core kernel that splits the operands in registers (kokkos/tensor_core_gemm.hpp);
  // what it declines (CPU tensors, unaligned shapes) is split here from torch ops.
  if (gemm_tf32x3_tensor_cores(out, a, b, bias)) return;
  const auto [a_hi, a_lo] = split_tf32(a);
  const auto [b_hi, b_lo] = split_tf32(b);
  const Tf32Switch tf32(true);
  // The two small terms first, then the large one, all summed in fp32 into a contiguous tensor:
  // summed in place into a column view (the SO(2) blocks' outputs) the product came out 6x
  // less accurate on the H200 (1.5e-6 against 2.5e-7 of the largest entry; doc/engine.md,
  // "Precision modes"), so a view gets one copy at the end.
  Tensor acc = out.is_contiguous() ? out : torch::empty(out.sizes(), out.options());
  native_out(acc, a_lo, b_hi, bias);
  acc.addmm_(a_hi, b_lo);
  acc.addmm_(a_hi, b_hi);
  if (!acc.is_same(out)) out.copy_(acc);
}

// a w^T + bias with a backward in the same GEMM mode. a is kept for the backward only when w
// needs a gradient (as torch's addmm does), so the mode costs no activation memory. No bias is
// an empty tensor: torch's Function::apply takes no undefined inputs.
// (The empty tensor needs no gradient, so needs_input_grad(2) is false for it.)
struct LinearFn : public torch::autograd::Function<LinearFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& w, const Tensor& bias) {
    ctx->save_for_backward({w.requires_grad() ? a : Tensor(), w});
    return gemm(a, w.t(), bias.numel() > 0 ? bias : Tensor());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const Tensor& g = grads[0];
    if (!g.defined()) return {Tensor(), Tensor(), Tensor()};
    const Tensor gc = g.contiguous();
    const Tensor grad_a = ctx->needs_input_grad(0) ? gemm(gc, saved[1]) : Tensor();
    const Tensor grad_w = ctx->needs_input_grad(1) ? gemm(gc.t(), saved[0]) : Tensor();
    const Tensor grad_b = ctx->needs_input_grad(2) ? gc.sum(0) : Tensor();
    return {grad_a, grad_w, grad_b};
  }
};

}  // namespace

GemmMode gemm_mode() { return g_mode.load(); }

Tf32Switch::Tf32Switch(bool on) : m_prev(at::globalContext().allowTF32CuBLAS()) {
  at::globalContext().setAllowTF32CuBLAS(on);
}

Tf32Switch::~Tf32Switch() { at::globalContext().setAllowTF32CuBLAS(m_prev); }

GemmScope::GemmScope(Precision precision)
    : m_prev_mode(g_mode.exchange(mode_of(precision))), m_tf32(precision == Precision::tf32) {}

GemmScope::~GemmScope() { g_mode.store(m_prev_mode); }

std::pair<Tensor, Tensor> split_tf32(const Tensor& x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat, "edgeframe: split_tf32 wants fp32");
  // Round half away from zero in the magnitude bits (the sign bit is apart), then clear the 13
  // bits that TF32 does not keep. A carry into the exponent is the correct rounding.
  constexpr std::int32_t half_ulp = 1 << 12, keep = ~((1 << 13) - 1);
  Tensor hi = (x.view(torch::kInt32) + half_ulp).bitwise_and_(keep).view(torch::kFloat);
  Tensor lo = x - hi;
  return {std::move(hi), std::move(lo)};
}

void gemm_out(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {
  // bf16 operands (kernel outputs stored for the bf16 mode, ops.hpp so2_convolution) take that
  // mode's GEMM whatever the mode; fp32 ones the mode's; fp64 the native one.
  const GemmMode mode = a.scalar_type() == torch::kBFloat16 ? GemmMode::bf16
                        : a.scalar_type() == torch::kFloat  ? g_mode.load()
                                                            : GemmMode::native;
  switch (mode) {
    case GemmMode::native:
      native_out(out, a, b, bias);
      return;
    case GemmMode::bf16:
      bf16_out(out, a, b, bias);
      return;
    case GemmMode::tf32x3:
      tf32x3_out(out, a, b, bias);
      return;
  }
}

Tensor gemm(const Tensor& a, const Tensor& b, const Tensor& bias) {
  // bf16 operands give an fp32 product (the bf16 mode sums in fp32): an out of a's dtype would
  // round the product to bfloat16.
  const auto dtype = a.scalar_type() == torch::kBFloat16 ? torch::kFloat : a.scalar_type();
  Tensor out = torch::empty({a.size(0), b.size(1)}, a.options().dtype(dtype));
  gemm_out(out, a, b, bias);
  return out;
}

Tensor gemm_linear(const Tensor& a, const Tensor& w, const Tensor& bias) {
  if (a.scalar_type() != torch::kFloat || g_mode.load() == GemmMode::native) {
    if (!bias.defined()) return a.matmul(w.t());
    return a.dim() == 2 ? torch::addmm(bias, a, w.t()) : a.matmul(w.t()) + bias;
  }
  const Tensor b = bias.defined() ? bias : torch::empty({0}, a.options());
  if (a.dim() == 2) return LinearFn::apply(a, w, b);
  // [..., K]: the leading dimensions as rows of one GEMM
  std::vector<std::int64_t> sizes(a.sizes().begin(), a.sizes().end());
  sizes.back() = w.size(0);
  return LinearFn::apply(a.reshape({-1, a.size(-1)}), w, b).view(sizes);
}

}  // namespace edgeframe::impl
