// The wgmma 3xTF32 kernel (kokkos/tensor_core_gemm_wgmma.hpp) against the mma.sync kernel
// (kokkos/tensor_core_gemm.hpp) and cuBLAS on model v2's SO(2) GEMM shapes (UMA-S, M = 281 232
// edges): time (median of --reps, the W split included) and max |C - C_fp64| / max |C_fp64|;
// the wgmma kernel in the engine's tiling (3 warpgroups per block x 3 stages of k tiles,
// tcw::gemm's default) and in 2 x 3.
// (The other reading of the descriptor's LBO / SBO,
// swapped, reads shared memory out of range under compute-sanitizer; doc/performance.md,
// "Precision modes".) Build and run on a GPU machine:
//   nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ikokkos -Ibench bench/wgmma/wgmma_tf32x3_bench.cu -lcublas -o /tmp/wg
//   /tmp/wg [--m 281232] [--reps 20]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../gemm_bench_common.cuh"  // bench/
#include "tensor_core_gemm.hpp"
#include "tensor_core_gemm_wgmma.hpp"

using namespace gemm_bench;

int main(int argc, char** argv) {
  int m = 281232, reps = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--m")) m = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
  }
  const int shapes[][2] = {{768, 640}, {1024, 512}, {512, 256}, {384, 384},
                           {512, 512}, {256, 256},  {128, 128}, {100, 36}};
  cublasHandle_t h;
  CHECK_CUBLAS(cublasCreate(&h));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  cudaDeviceProp prop;
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("device %s, M %d, median of %d (ms; error max|dC|/max|C| against fp64)\n", prop.name, m, reps);
  std::printf("%5s %5s | %8s %8s %8s | %8s %8s %8s | TFLOP/s tf32 mma.sync wgmma | wgmma 2x3: ms (error)\n", "K", "N",
              "tf32", "mma.sync", "wgmma", "sgemm", "mma.sync", "wgmma");
  for (const auto& sh : shapes) {
    const int k = sh[0], n = sh[1];
    const int mm = (k == 100) ? 1000 : m;  // an odd small shape: K and N not multiples of 8 / 128
    const long long na = (long long)mm * k, nw = (long long)n * k, nc = (long long)mm * n;
    float *a, *w, *c, *wb;
    double *ad, *wd, *cd, *err;
    const long long img = edgeframe::kk::tcw::w_image_floats(n, k);
    CHECK_CUDA(cudaMalloc(&a, na * 4));
    CHECK_CUDA(cudaMalloc(&w, nw * 4));
    CHECK_CUDA(cudaMalloc(&c, nc * 4));
    CHECK_CUDA(cudaMalloc(&wb, 2 * img * 4LL));  // both images
    CHECK_CUDA(cudaMalloc(&ad, na * 8));
    CHECK_CUDA(cudaMalloc(&wd, nw * 8));
    CHECK_CUDA(cudaMalloc(&cd, nc * 8));
    CHECK_CUDA(cudaMalloc(&err, 16));
    fill_mixed<<<(na + 255) / 256, 256>>>(a, na, 11 + k);
    fill_mixed<<<(nw + 255) / 256, 256>>>(w, nw, 12 + n);
    to_double<<<(na + 255) / 256, 256>>>(a, ad, na);
    to_double<<<(nw + 255) / 256, 256>>>(w, wd, nw);
    const double one_d = 1, zero_d = 0;
    // row-major C = A W^T is column-major C^T = W A^T; W row-major [N, K] is column-major [K, N]
    cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, n, mm, k, &one_d, wd, k, ad, k, &zero_d, cd, n);
    const float one = 1, zero = 0;
    edgeframe::kk::tc::GemmArgs t;
    t.a = a, t.w = w, t.c = c, t.lda = k, t.ldw = k, t.ldc = n, t.m = mm, t.n = n, t.k = k;
    auto run = [&](int which) {
      if (which == 0 || which == 4)
        cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, mm, k, &one, w, CUDA_R_32F, k, a, CUDA_R_32F, k, &zero, c,
                     CUDA_R_32F, n, which == 0 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT);
      else if (which == 1)
        edgeframe::kk::tc::gemm<3>(t, 0);
      else if (which == 2)
        edgeframe::kk::tcw::gemm(a, k, w, k, nullptr, c, n, mm, n, k, wb, 0);
      else
        edgeframe::kk::tcw::gemm<2, 3>(a, k, w, k, nullptr, c, n, mm, n, k, wb, 0);
    };
    double ms[6], rel[6];
    for (int which : {0, 1, 2, 4, 5}) {
      poison<<<(nc + 255) / 256, 256>>>(c, nc);
      run(which);
      CHECK_CUDA(cudaGetLastError());
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemset(err, 0, 16));
      err_max<<<(nc + 255) / 256, 256>>>(c, cd, nc, err);
      double e[2];
      CHECK_CUDA(cudaMemcpy(e, err, 16, cudaMemcpyDeviceToHost));
      rel[which] = e[0] / e[1];
      ms[which] = median_ms(e0, e1, reps, [&] { run(which); });
    }
    const double tflop = 2.0 * mm * k * n * 1e-12;
    std::printf("%5d %5d | %8.3f %8.3f %8.3f | %8.1e %8.1e %8.1e | %5.0f %5.0f %5.0f | %.3f (%.1e)\n", k, n, ms[0],
                ms[1], ms[2], rel[4], rel[1], rel[2], tflop / ms[0] * 1e3, tflop / ms[1] * 1e3, tflop / ms[2] * 1e3,
                ms[5], rel[5]);
    cudaFree(a), cudaFree(w), cudaFree(c), cudaFree(wb), cudaFree(ad), cudaFree(wd), cudaFree(cd), cudaFree(err);
  }
  cublasDestroy(h);
  return 0;
}
