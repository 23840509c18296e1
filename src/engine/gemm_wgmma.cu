// gemm_wgmma.hpp's functions: the wgmma kernel's launcher, compiled for sm_90a (CMakeLists.txt).
#include "gemm_wgmma.hpp"

#include <cuda_runtime.h>

#include <atomic>

#include "tensor_core_gemm_wgmma.hpp"

namespace edgeframe::impl {

namespace {

bool query_runs_on(int device) {
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();  // a failed query leaves no error behind for the engine's next check
    return false;
  }
  return major == 9 && minor == 0;
}

}  // namespace

// Asked once per GEMM call: the answer is kept per device (0 unknown, 1 no, 2 yes).
bool wgmma_tf32x3_runs_on(int device) {
  static std::atomic<int> known[64] = {};
  if (device < 0 || device >= 64) return query_runs_on(device);
  int v = known[device].load(std::memory_order_relaxed);
  if (v == 0) {
    v = query_runs_on(device) ? 2 : 1;
    known[device].store(v, std::memory_order_relaxed);
  }
  return v == 2;
}

std::size_t wgmma_tf32x3_scratch_floats(int n, int k) {
  return 2 * static_cast<std::size_t>(kk::tcw::w_image_floats(n, k));
}

bool wgmma_tf32x3(const float* a, long long lda, const float* w, long long ldw, const float* bias, float* c,
                  long long ldc, int m, int n, int k, float* scratch, void* stream) {
  return kk::tcw::gemm(a, lda, w, ldw, bias, c, ldc, m, n, k, scratch, static_cast<cudaStream_t>(stream));
}

}  // namespace edgeframe::impl
