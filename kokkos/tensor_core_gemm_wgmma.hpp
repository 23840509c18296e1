// The split mode's 3xTF32 GEMM on sm_90a's warpgroup MMA (wgmma): C = A W^T (+ bias), the
// operand splits and the sums as kokkos/tensor_core_gemm.hpp's mma.sync kernel, which it
// replaces on devices of compute capability 9.0 (src/engine/gemm_wgmma.cu). The mma.sync kernel
// is bound by latency at 2 warps per scheduler with 7 instructions per mma; wgmma issues one
// instruction per 64 x 128 x 8 product and reads B from shared memory itself: 1.54-1.62x the
// mma.sync kernel's speed on model v2's SO(2) shapes (doc/performance.md "Precision modes").
//
// Split: A in registers (mma.m16n8k8's A fragment per warp, 16 rows), its TF32 head by integer
// rounding, the tail unrounded (the tensor cores drop its low 13 bits). W is split once per call
// by split_w into a big and a small image, each in the order in which a k step's 128 x 8 B tile
// sits in shared memory for a no-swizzle K-major descriptor: core matrices of 8 rows x 4 k (128
// bytes), the 16 along N 128 bytes apart (SBO), the two along K 2048 bytes apart (LBO). Per 16
// k's the three products are summed from zero (scale-d 0 on the first) and added to the running
// sum in fp32 (round to nearest; the tensor cores' own sums round toward zero).
//
// Tiling: a block of three warpgroups computes 192 x 128 of C (warpgroup g: rows 64 g ..), k
// tiles of 32 streamed by cp.async in 3 stages (179 kB of shared memory, one block per SM); A
// rows padded to 36 floats so that the fragment loads hit 32 banks; a wait after every k step's
// three wgmma (A's registers are rewritten by the next), which the other warpgroups' work
// overlaps. Three warpgroups are 1.11x faster than two (the block-wide barrier per k tile is the
// largest stall; Nsight Compute); with that barrier replaced by per-stage mbarriers and A's rows
// loaded by one bulk copy each, the kernel was 3x slower (doc/performance.md "Precision
// modes"). Shapes as the mma.sync kernel's: K, N and the row strides multiples of 4, A, W and C
// 16-byte aligned; M, N, K otherwise free.
//
// The wgmma instructions exist in sm_90a code only: compiled for another target the kernel is
// empty, and the launcher runs it on devices of compute capability 9.0 only.
#pragma once

#if defined(__CUDACC__)

#include <cstdint>

#include "tensor_core_gemm.hpp"  // the operand split and the cp.async helpers

namespace edgeframe::kk::tcw {

constexpr int kTileN = 128, kTileK = 32;
constexpr int kPitchA = 36;                // floats per A row in shared memory
constexpr int kFloatsB = kTileN * kTileK;  // one stage's big (or small) W tile: 4 k steps

// A block of kWarpgroups warpgroups (64 rows of C each) and kStages stages of k tiles.
template <int kWarpgroups, int kStages>
struct Tiling {
  static constexpr int kTileM = 64 * kWarpgroups, kThreads = 128 * kWarpgroups;
  static constexpr int kFloatsA = kTileM * kPitchA;  // one stage's A tile
  static constexpr int kStageFloats = kFloatsA + 2 * kFloatsB;
  static constexpr int kSharedBytes = kStages * kStageFloats * 4;  // 3 warpgroups, 3 stages: 179 kB
};

struct Args {
  const float* a = nullptr;
  const float* w_big = nullptr;  // split_w's images: [tiles_n][k_tiles * 4 k steps][1024] floats
  const float* w_small = nullptr;
  const float* bias = nullptr;  // [N] or null
  float* c = nullptr;
  long long lda = 0, ldc = 0;
  int m = 0, n = 0, k = 0;
};

// Floats of one of split_w's images for W [n, k]: whole tiles, zero past N and K.
inline long long w_image_floats(int n, int k) {
  return (long long)((n + kTileN - 1) / kTileN) * ((k + kTileK - 1) / kTileK) * kFloatsB;
}

// W [n, k] row-major (ldw) -> the big and small images.
__global__ void split_w(const float* w, long long ldw, int n, int k, float* big, float* small) {
  const int k_steps = ((k + kTileK - 1) / kTileK) * 4;
  const long long total = (long long)((n + kTileN - 1) / kTileN) * k_steps * 1024;
  const long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (idx >= total) return;
  const int within = int(idx % 1024);
  const long long blk = idx / 1024;
  const int s = int(blk % k_steps), tile = int(blk / k_steps);
  const int j = within / 512, i = (within % 512) / 32, r = (within % 32) / 4, c = within % 4;
  const int row = tile * kTileN + i * 8 + r, col = s * 8 + j * 4 + c;
  const float x = (row < n && col < k) ? w[row * ldw + col] : 0.f;
  const std::uint32_t h = tc::tf32_head(x);
  big[idx] = __uint_as_float(h);
  small[idx] = x - __uint_as_float(h);
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// The compiler sees an asm's outputs as written when it issues, but wgmma writes them (and reads
// its A registers) until wgmma.wait_group: these empty asm's keep every access to them on its
// side of the fence and the wait.
__device__ __forceinline__ void pin(float& r) { asm volatile("" : "+f"(r)::"memory"); }
__device__ __forceinline__ void keep(std::uint32_t r) { asm volatile("" ::"r"(r) : "memory"); }

// Shared-memory descriptor, no swizzle: start, LBO (K-adjacent core matrices, 2048 bytes apart in
// split_w's image), SBO (N-adjacent, 128 bytes apart), as the PTX ISA describes them for K-major
// operands; read the other way round they reach past the stage (compute-sanitizer says so).
__device__ __forceinline__ std::uint64_t desc_of(const float* p) {
  const std::uint64_t addr = static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
  constexpr std::uint64_t lbo = 2048, sbo = 128;
  return ((addr >> 4) & 0x3fff) | (((lbo >> 4) & 0x3fff) << 16) | (((sbo >> 4) & 0x3fff) << 32);
}

// d (+)= a b for a 64 x 128 x 8 tile of the warpgroup: a from registers (mma.m16n8k8's A
// fragment, per warp 16 rows), b by its shared-memory descriptor; scale_d 0 writes a b.
__device__ __forceinline__ void wgmma_64x128x8(float (&d)[64], const std::uint32_t (&a)[4], std::uint64_t desc,
                                               int scale_d) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
      "%24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
      "%46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, "
      "%67}, %68, p, 1, 1;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),
        "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
        "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]),
        "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]),
        "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
        "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]),
        "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(scale_d));
}

template <class T>
__device__ __forceinline__ void load_stage(const Args& g, float* st, int m0, int tile_n, int kt, int k_tiles) {
  float* sa = st;
  float* sb = st + T::kFloatsA;
  float* ss = sb + kFloatsB;
#pragma unroll
  for (int idx = threadIdx.x; idx < T::kTileM * 8; idx += T::kThreads) {  // 16-byte chunks of A, 8 per row
    const int r = idx / 8, c = idx % 8;
    const int gk = kt * kTileK + c * 4, gm = m0 + r;
    const bool ok = gk < g.k && gm < g.m;
    tc::copy16(sa + r * kPitchA + c * 4, ok ? g.a + gm * g.lda + gk : g.a, ok);
  }
  const long long off0 = ((long long)tile_n * k_tiles + kt) * kFloatsB;
#pragma unroll
  for (int idx = threadIdx.x; idx < kFloatsB / 4; idx += T::kThreads) {  // 1024 chunks of each image
    tc::copy16(sb + idx * 4, g.w_big + off0 + idx * 4, true);
    tc::copy16(ss + idx * 4, g.w_small + off0 + idx * 4, true);
  }
}

// One k tile (4 k steps of 8) of a warpgroup's 64 x 128 product from a stage in shared memory:
// the three products of each 16 k's summed from zero in `part` (scale-d 0 on the first) and added
// to `acc` in fp32.
__device__ __forceinline__ void mma_tile(const float* sa, const float* sb, const float* ss, int row0, int tig,
                                         float (&part)[64], float (&acc)[64]) {
#pragma unroll
  for (int s = 0; s < 4; ++s) {
    const float* ar = sa + row0 * kPitchA + s * 8 + tig;
    const float x[4] = {ar[0], ar[8 * kPitchA], ar[4], ar[8 * kPitchA + 4]};
    std::uint32_t a_big[4], a_small[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) tc::to_operand<3>(x[q], a_big[q], a_small[q]);
    const std::uint64_t db = desc_of(sb + s * 1024), ds = desc_of(ss + s * 1024);
#pragma unroll
    for (int i = 0; i < 64; ++i) pin(part[i]);
    wgmma_fence();
    wgmma_64x128x8(part, a_big, ds, s & 1);  // scale-d 0 on each 16 k's first product
    wgmma_64x128x8(part, a_small, db, 1);
    wgmma_64x128x8(part, a_big, db, 1);
    wgmma_commit();
    wgmma_wait0();
#pragma unroll
    for (int i = 0; i < 64; ++i) pin(part[i]);
#pragma unroll
    for (int q = 0; q < 4; ++q) keep(a_big[q]), keep(a_small[q]);
    if (s & 1) {
#pragma unroll
      for (int i = 0; i < 64; ++i) acc[i] += part[i];
    }
  }
}

// acc (+ bias) -> C, this thread's 2 rows x 32 columns of the tile.
__device__ __forceinline__ void store_c(const Args& g, const float (&acc)[64], int m0, int n0, int row0, int tig) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int col = n0 + 8 * j + 2 * tig;
    if (col >= g.n) continue;  // n is a multiple of 4, so col + 1 < n too
    const float b0 = g.bias ? g.bias[col] : 0.f, b1 = g.bias ? g.bias[col + 1] : 0.f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int row = m0 + row0 + 8 * h;
      if (row >= g.m) continue;
      *reinterpret_cast<float2*>(g.c + row * g.ldc + col) =
          make_float2(acc[4 * j + 2 * h] + b0, acc[4 * j + 2 * h + 1] + b1);
    }
  }
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

template <int kWarpgroups, int kStages>
__global__ void __launch_bounds__(128 * kWarpgroups, 1) gemm_kernel(const Args g) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using T = Tiling<kWarpgroups, kStages>;
  constexpr int kTileM = T::kTileM, kStageFloats = T::kStageFloats;
  extern __shared__ __align__(128) float smem[];
  const int tiles_n = (g.n + kTileN - 1) / kTileN;
  const int tile_n = int(blockIdx.x % tiles_n);
  const int m0 = int(blockIdx.x / tiles_n) * kTileM, n0 = tile_n * kTileN;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gid = lane >> 2, tig = lane & 3;
  const int row0 = (warp >> 2) * 64 + (warp & 3) * 16 + gid;  // this thread's first A / C row in the tile
  const int k_tiles = (g.k + kTileK - 1) / kTileK;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_tiles) load_stage<T>(g, smem + s * kStageFloats, m0, tile_n, s, k_tiles);
    tc::copies_commit();
  }
  float acc[64], part[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) acc[i] = 0.f, part[i] = 0.f;
  for (int kt = 0; kt < k_tiles; ++kt) {
    tc::copies_wait<kStages - 2>();
    __syncthreads();
    if (kt + kStages - 1 < k_tiles)
      load_stage<T>(g, smem + ((kt + kStages - 1) % kStages) * kStageFloats, m0, tile_n, kt + kStages - 1, k_tiles);
    tc::copies_commit();
    const float* sa = smem + (kt % kStages) * kStageFloats;
    mma_tile(sa, sa + T::kFloatsA, sa + T::kFloatsA + kFloatsB, row0, tig, part, acc);
  }
  tc::copies_wait<0>();
  store_c(g, acc, m0, n0, row0, tig);
#endif
}

// Whether the kernel takes these shapes and addresses (as the mma.sync kernel's gemm_applies).
inline bool gemm_applies(const float* a, const float* w, const float* c, long long lda, long long ldw, long long ldc,
                         int m, int n, int k) {
  auto aligned = [](const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; };
  return m >= 0 && n > 0 && k > 0 && n % 4 == 0 && k % 4 == 0 && lda % 4 == 0 && ldw % 4 == 0 && ldc % 4 == 0 &&
         aligned(a) && aligned(w) && aligned(c);
}

// C = A W^T (+ bias) on `stream`, W [n, k] row-major (ldw): splits W into scratch (2
// w_image_floats(n, k) floats, 16-byte aligned), then the product. false, having launched
// nothing, where gemm_applies says no or the grid is too large; launch errors are the caller's
// to check. The caller runs it on compute capability 9.0 only.
template <int kWarpgroups = 3, int kStages = 3>
bool gemm(const float* a, long long lda, const float* w, long long ldw, const float* bias, float* c, long long ldc,
          int m, int n, int k, float* scratch, cudaStream_t stream) {
  using T = Tiling<kWarpgroups, kStages>;
  constexpr int kTileM = T::kTileM;
  if (!gemm_applies(a, w, c, lda, ldw, ldc, m, n, k)) return false;
  if (m == 0) return true;
  const long long tiles = (long long)((m + kTileM - 1) / kTileM) * ((n + kTileN - 1) / kTileN);
  if (tiles > 0x7fffffffLL || (long long)m + kTileM > 0x7fffffffLL) return false;
  const long long img = w_image_floats(n, k);
  split_w<<<unsigned((img + 255) / 256), 256, 0, stream>>>(w, ldw, n, k, scratch, scratch + img);
  Args g;
  g.a = a, g.w_big = scratch, g.w_small = scratch + img, g.bias = bias, g.c = c;
  g.lda = lda, g.ldc = ldc, g.m = m, g.n = n, g.k = k;
  cudaFuncSetAttribute(gemm_kernel<kWarpgroups, kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, T::kSharedBytes);
  gemm_kernel<kWarpgroups, kStages><<<unsigned(tiles), T::kThreads, T::kSharedBytes, stream>>>(g);
  return true;
}

}  // namespace edgeframe::kk::tcw

#endif  // __CUDACC__
