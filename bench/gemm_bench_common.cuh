// What the GEMM microbenchmarks share (bench/tensor_core_gemm_bench.cu, bench/wgmma/): error
// checks, operands with a spread of exponents, the fp64 reference's conversion, the error of a
// result against it and the median time of a launch.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK_CUDA(x)                                                                 \
  do {                                                                                \
    cudaError_t e_ = (x);                                                             \
    if (e_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)
#define CHECK_CUBLAS(x)                                                         \
  do {                                                                          \
    cublasStatus_t s_ = (x);                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                          \
      std::fprintf(stderr, "%s:%d cublas status %d\n", __FILE__, __LINE__, s_); \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

namespace gemm_bench {
namespace {  // each benchmark is one translation unit

// x = n e^(2 g), n and g standard normal (Box-Muller on a hashed counter): a spread of exponents
__device__ float uniform01(unsigned long long i) {
  i ^= i >> 33;
  i *= 0xff51afd7ed558ccdULL;
  i ^= i >> 33;
  i *= 0xc4ceb9fe1a85ec53ULL;
  i ^= i >> 33;
  return (float(i >> 40) + 0.5f) * (1.0f / 16777216.0f);
}
__device__ float normal(unsigned long long i) {
  return sqrtf(-2.0f * logf(uniform01(2 * i))) * cospif(2.0f * uniform01(2 * i + 1));
}
__global__ void fill_mixed(float* x, long long n, unsigned long long seed) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = normal(seed * 0x9e3779b97f4a7c15ULL + 2 * i) * expf(2.0f * normal(seed * 0x9e3779b97f4a7c15ULL + 2 * i + 1));
}

__global__ void to_double(const float* x, double* y, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i];
}

// NaN everywhere: an entry a kernel leaves unwritten shows in err_max.
__global__ void poison(float* x, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = __int_as_float(0x7fc00000);
}

// out[0] = max |c - ref| (a NaN entry counts as 1e300), out[1] = max |ref|; out zeroed before.
__global__ void err_max(const float* c, const double* ref, long long n, double* out) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double d = fabs(double(c[i]) - ref[i]);
  if (!(d == d)) d = 1e300;
  // non-negative doubles order as their bit patterns
  atomicMax(reinterpret_cast<unsigned long long*>(out), __double_as_longlong(d));
  atomicMax(reinterpret_cast<unsigned long long*>(out + 1), __double_as_longlong(fabs(ref[i])));
}

// Median time (ms) of `reps` runs of f, each between two events on the default stream.
template <class F>
double median_ms(cudaEvent_t e0, cudaEvent_t e1, int reps, F&& f) {
  std::vector<float> t;
  for (int r = 0; r < reps; ++r) {
    CHECK_CUDA(cudaEventRecord(e0));
    f();
    CHECK_CUDA(cudaEventRecord(e1));
    CHECK_CUDA(cudaEventSynchronize(e1));
    float v;
    CHECK_CUDA(cudaEventElapsedTime(&v, e0, e1));
    t.push_back(v);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace
}  // namespace gemm_bench
