// The split mode's GEMM on CUDA tensor cores (gemm.hpp, gemm_tf32x3_tensor_cores): torch tensors
// -> the strides and pointers of kokkos/tensor_core_gemm.hpp's mma.sync kernel, or on compute
// capability 9.0 of the wgmma kernel (gemm_wgmma.hpp), launched on torch's current stream (the
// engine's Kokkos stream, bridge.hpp).
#include <Kokkos_Macros.hpp>

#include "gemm.hpp"

#ifdef KOKKOS_ENABLE_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>

#include "tensor_core_gemm.hpp"
#ifdef EDGEFRAME_WGMMA
#include "gemm_wgmma.hpp"
#endif
#endif

namespace edgeframe::impl {

#ifndef KOKKOS_ENABLE_CUDA

bool gemm_tf32x3_tensor_cores(torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                              TensorCoreKernel) {
  return false;
}

#else

bool gemm_tf32x3_tensor_cores(torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                              const torch::Tensor& bias, TensorCoreKernel kernel) {
  const auto f32_cuda = [&](const torch::Tensor& t) {
    return t.scalar_type() == torch::kFloat && t.is_cuda() && t.device() == a.device();
  };
  if (!f32_cuda(a) || !f32_cuda(b) || !f32_cuda(out) || a.dim() != 2 || b.dim() != 2 || out.dim() != 2) return false;
  if (bias.defined() && (!f32_cuda(bias) || bias.dim() != 1 || bias.stride(0) != 1 || bias.size(0) != b.size(1)))
    return false;
  if (a.size(1) != b.size(0) || out.size(0) != a.size(0) || out.size(1) != b.size(1)) return false;
  if (a.stride(1) != 1 || out.stride(1) != 1) return false;
  if (a.size(0) > 0x7fffff00) return false;  // the kernel's row index is an int, with a tile's rows added
  // The kernel takes B as W^T with W [N, K] row-major: b = w^T of a linear layer's weight as it
  // is; a row-major b [K, N] (a weight in a backward) is copied into that form (a small copy),
  // after every check, so that a declined product has done nothing.
  const bool copy_b = b.stride(0) != 1;
  if (copy_b && b.stride(1) != 1) return false;
  kk::tc::GemmArgs g;
  g.a = a.data_ptr<float>();
  g.w = b.data_ptr<float>();  // the copy, where one is made, is 16-byte aligned as b must be here
  g.ldw = copy_b ? b.size(0) : b.stride(1);
  g.bias = bias.defined() ? bias.data_ptr<float>() : nullptr;
  g.c = out.data_ptr<float>();
  g.lda = a.stride(0);
  g.ldc = out.stride(0);
  g.m = static_cast<int>(a.size(0));
  g.n = static_cast<int>(b.size(1));
  g.k = static_cast<int>(a.size(1));
  if (!kk::tc::gemm_applies(g)) return false;
#ifdef EDGEFRAME_WGMMA
  const bool wgmma_here = wgmma_tf32x3_runs_on(a.device().index());
#else
  const bool wgmma_here = false;
#endif
  if (kernel == TensorCoreKernel::wgmma && !wgmma_here) return false;
  if (g.m == 0) return true;
  const c10::cuda::CUDAGuard device(a.device());  // the attribute and the launch go to a's device
  torch::Tensor w;
  if (copy_b) {
    w = b.t().contiguous();
    g.w = w.data_ptr<float>();
  }
  cudaStream_t stream = at::cuda::getCurrentCUDAStream(a.device().index()).stream();
  if (wgmma_here && kernel != TensorCoreKernel::mma_sync) {
#ifdef EDGEFRAME_WGMMA
    // W's split images, from torch's caching allocator on this stream (freed in stream order)
    const torch::Tensor scratch =
        torch::empty({static_cast<std::int64_t>(wgmma_tf32x3_scratch_floats(g.n, g.k))}, a.options());
    if (!wgmma_tf32x3(g.a, g.lda, g.w, g.ldw, g.bias, g.c, g.ldc, g.m, g.n, g.k, scratch.data_ptr<float>(), stream))
      return false;
#endif
  } else if (!kk::tc::gemm<3>(g, stream)) {
    return false;
  }
  // A launch that failed (resources, a device that lacks sm_80's instructions) throws here
  // instead of leaving out unwritten.
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}

#endif

}  // namespace edgeframe::impl
