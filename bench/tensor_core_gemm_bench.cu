// The split mode's tensor-core GEMM (kokkos/tensor_core_gemm.hpp) against cuBLAS on model v2's
// GEMM shapes, one GPU: time (median of --reps after a warm-up) and max |C - C_fp64| / max
// |C_fp64| of cuBLAS fp32, cuBLAS TF32, this kernel's 3xTF32 and its plain TF32 form, on the
// same fp32 operands (mixed magnitudes, as tests/unit/test_gemm.cpp draws them). cuBLAS fp64 of
// the same operands is the reference. The backward's shapes (B stored [K, N]) give the kernel
// W = B^T, made once outside the timing (the engine makes it per call: a copy of a weight).
// Build and run on a GPU machine (doc/performance.md, "Precision modes"):
//   nvcc -O3 -std=c++17 -arch=sm_90 -Ikokkos bench/tensor_core_gemm_bench.cu -lcublas -o /tmp/tcgemm
//   /tmp/tcgemm [--m 281232] [--reps 20]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "gemm_bench_common.cuh"
#include "tensor_core_gemm.hpp"

namespace {

using namespace gemm_bench;

struct Shape {
  const char* what;
  int k, n;
  bool b_kn;  // backward (B = W [K, N] row-major) or forward (B = W^T, W [N, K])
};

}  // namespace

int main(int argc, char** argv) {
  int m = 281232, reps = 20;  // bcc Cu 4394 at r_cut 6 A: its edge count
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--m")) m = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  // The SO(2) blocks of a UMA-S layer (L 2, mmax 2, C = H = 128): so2_1 m0 / m1 / m2, so2_2
  // m0 / m1 / m2, forward, then the backward's grad-input GEMMs; one radial hidden layer.
  const Shape shapes[] = {
      {"so2_1 m0 fwd", 768, 640, false},  {"so2_1 m1 fwd", 1024, 512, false}, {"so2_1 m2 fwd", 512, 256, false},
      {"so2_2 m0 fwd", 384, 384, false},  {"so2_2 m1 fwd", 512, 512, false},  {"so2_2 m2 fwd", 256, 256, false},
      {"so2_1 m0 bwd", 640, 768, true},   {"so2_1 m1 bwd", 512, 1024, true},  {"so2_2 m0 bwd", 384, 384, true},
      {"radial w1 fwd", 128, 128, false},
  };
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, M %d, median of %d\n", prop.name, m, reps);
  std::printf("%-14s %5s %5s | %9s %9s %9s %9s | %8s %8s %8s %8s (ms; max|dC|/max|C| vs fp64)\n", "gemm", "K", "N",
              "sgemm", "tf32", "tc 3xtf32", "tc tf32", "sgemm", "tf32", "3xtf32", "tc tf32");
  for (const Shape& s : shapes) {
    const long long na = (long long)m * s.k, nb = (long long)s.k * s.n, nc = (long long)m * s.n;
    float *a, *b, *c;
    double *ad, *bd, *cd, *err;
    CHECK_CUDA(cudaMalloc(&a, na * 4));
    CHECK_CUDA(cudaMalloc(&b, nb * 4));
    CHECK_CUDA(cudaMalloc(&c, nc * 4));
    CHECK_CUDA(cudaMalloc(&ad, na * 8));
    CHECK_CUDA(cudaMalloc(&bd, nb * 8));
    CHECK_CUDA(cudaMalloc(&cd, nc * 8));
    CHECK_CUDA(cudaMalloc(&err, 16));
    fill_mixed<<<(na + 255) / 256, 256>>>(a, na, 1);
    fill_mixed<<<(nb + 255) / 256, 256>>>(b, nb, 2);
    to_double<<<(na + 255) / 256, 256>>>(a, ad, na);
    to_double<<<(nb + 255) / 256, 256>>>(b, bd, nb);
    // Row-major C = A B is column-major C^T = B^T A^T. B stored [K, N] row-major is column-major
    // [N, K] (no transpose); stored as W [N, K] it is column-major [K, N] (transpose).
    const cublasOperation_t opb = s.b_kn ? CUBLAS_OP_N : CUBLAS_OP_T;
    const int ldb = s.b_kn ? s.n : s.k;
    const double one_d = 1, zero_d = 0;
    CHECK_CUBLAS(cublasDgemm(h, opb, CUBLAS_OP_N, s.n, m, s.k, &one_d, bd, ldb, ad, s.k, &zero_d, cd, s.n));
    const float one = 1, zero = 0;
    // the kernel's W [N, K]: b itself (forward) or b [K, N] transposed (backward)
    float* w = b;
    if (s.b_kn) {
      CHECK_CUDA(cudaMalloc(&w, nb * 4));
      CHECK_CUBLAS(cublasSgeam(h, CUBLAS_OP_T, CUBLAS_OP_N, s.k, s.n, &one, b, s.n, &zero, w, s.k, w, s.k));
    }
    edgeframe::kk::tc::GemmArgs g;
    g.a = a;
    g.w = w;
    g.c = c;
    g.lda = s.k;
    g.ldw = s.k;
    g.ldc = s.n;
    g.m = m;
    g.n = s.n;
    g.k = s.k;
    auto run = [&](int which) {
      if (which == 0 || which == 1)
        CHECK_CUBLAS(cublasGemmEx(h, opb, CUBLAS_OP_N, s.n, m, s.k, &one, b, CUDA_R_32F, ldb, a, CUDA_R_32F, s.k, &zero,
                                  c, CUDA_R_32F, s.n, which == 0 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_32F_FAST_TF32,
                                  CUBLAS_GEMM_DEFAULT));
      else if (which == 2)
        edgeframe::kk::tc::gemm<3>(g, 0);
      else
        edgeframe::kk::tc::gemm<1>(g, 0);
    };
    double ms[4], rel[4];
    for (int which = 0; which < 4; ++which) {
      run(which);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaMemset(err, 0, 16));
      err_max<<<(nc + 255) / 256, 256>>>(c, cd, nc, err);
      double e[2];
      CHECK_CUDA(cudaMemcpy(e, err, 16, cudaMemcpyDeviceToHost));
      rel[which] = e[0] / e[1];
      ms[which] = median_ms(e0, e1, reps, [&] { run(which); });
    }
    const double tflop = 2.0 * m * s.k * s.n * 1e-12;
    std::printf("%-14s %5d %5d | %9.3f %9.3f %9.3f %9.3f | %8.1e %8.1e %8.1e %8.1e | TFLOP/s %5.0f %5.0f %5.0f %5.0f\n",
                s.what, s.k, s.n, ms[0], ms[1], ms[2], ms[3], rel[0], rel[1], rel[2], rel[3], tflop / ms[0] * 1e3,
                tflop / ms[1] * 1e3, tflop / ms[2] * 1e3, tflop / ms[3] * 1e3);
    if (w != b) cudaFree(w);
    cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ad), cudaFree(bd), cudaFree(cd), cudaFree(err);
  }

  cublasDestroy(h);
  return 0;
}
