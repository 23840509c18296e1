// The split mode's wgmma GEMM (kokkos/tensor_core_gemm_wgmma.hpp) behind a plain C++ interface:
// its translation unit, gemm_wgmma.cu, is compiled for sm_90a by CMake's CUDA language, apart
// from the engine's other sources, which Kokkos' nvcc_wrapper compiles for sm_90 (it takes one
// architecture, and wgmma exists in sm_90a code only). CUDA builds only.
#pragma once

#include <cstddef>

namespace edgeframe::impl {

// Whether `device` (a CUDA ordinal) runs this build's sm_90a code: compute capability 9.0.
bool wgmma_tf32x3_runs_on(int device);

// Floats of scratch wgmma_tf32x3 needs for W [n, k] (its split images).
std::size_t wgmma_tf32x3_scratch_floats(int n, int k);

// c = a w^T (+ bias) in 3xTF32, w [n, k] row-major; shapes as kk::tc::GemmArgs (K, N and row
// strides multiples of 4, pointers 16-byte aligned). false, having launched nothing, where it
// does not apply; a launch error is left for the caller's check. stream: a cudaStream_t.
bool wgmma_tf32x3(const float* a, long long lda, const float* w, long long ldw, const float* bias, float* c,
                  long long ldc, int m, int n, int k, float* scratch, void* stream);

}  // namespace edgeframe::impl
