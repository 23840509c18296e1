// A tiled fp32 GEMM on CUDA tensor cores (mma.sync m16n8k8 TF32, sm_80 and newer), for the split
// precision mode: C = A W^T (+ bias) with each fp32 operand split in registers into a TF32 head and
// a TF32 tail, x = big + small, and three tensor-core products per tile,
//   A B ~ big_A small_B + small_A big_B + big_A big_B      (small_A small_B, ~2^-22 of it, left out)
// fp32's accuracy at tensor-core speed (doc/engine.md "Precision modes"). The tensor cores add
// into their fp32 accumulator rounding toward zero (Ootomo and Yokota, "Recovering single
// precision accuracy from Tensor Cores while surpassing the FP32 theoretical peak performance",
// IJHPCA 2022), which over K = 1024 would bias a sum well beyond fp32's error; so the three
// products of each 16 k's (two mma's of 8) are summed by the tensor cores from zero, small terms
// first in each, and added to the running sum by an ordinary fp32 add (round to nearest): six
// roundings toward zero per 16 k's, each of at most an ulp of a partial sum of those 16 k's.
// kTerms = 1 keeps only big_A big_B, summed directly: plain TF32, for measuring the tile loop.
//
// Why a kernel of our own: formed from torch ops (gemm.cpp's fallback) the split costs two passes
// over every operand and three GEMMs that each round their result to fp32 in memory; here every
// operand is read once and split where it is used.
//
// Shapes (all row-major with a row stride, unit column stride; the caller checks):
//   A [M, K] (lda), W [N, K] (ldw), C [M, N] (ldc; a column range of a wider matrix is fine),
//   bias [N] or null. K and N multiples of 4, lda / ldw / ldc multiples of 4, every pointer 16-byte
//   aligned (16-byte copies and float2 stores); M, N, K otherwise free (tiles past the edges are
//   zero-filled). A product with B stored [K, N] is this one with W = B^T, which the caller makes
//   (B is a weight matrix in every use of the engine: a small copy).
//
// Tiling: a block of 256 threads computes a 128 x 128 tile of C in k steps of 32; its 8 warps
// form a 2 x 4 grid of 64 x 32 warp tiles (4 x 4 mma tiles of 16 x 8). The k steps stream from
// global to shared memory by cp.async in kStages stages, so kStages - 1 of them are in flight
// while one is computed.
//
// Fragment loads: the GEMM sums over k, so the order in which an mma sees the k's is free as long
// as A and W use the same one. Thread (gid, tig) of a warp takes, for each 16 k's of a step, the
// four adjacent k's 4 tig .. 4 tig + 3: k 4 tig and 4 tig + 1 as its fragment slots tig and tig + 4
// of the first mma, 4 tig + 2 and + 3 of the second. So one 16-byte shared load gives a row's
// values for two mma's (where the textbook order needs four 4-byte loads). A tile row is 32 floats,
// the 32 banks; its 16-byte chunks are stored at chunk ^ (4 (row & 1)), so that the 8 threads of
// a quarter warp (two rows, four chunks each) hit 8 different chunk slots.
#pragma once

#if defined(__CUDACC__)  // nvcc (the engine's CUDA builds compile with nvcc_wrapper)

#include <cstdint>  // nvcc includes the CUDA runtime's declarations itself

namespace edgeframe::kk::tc {

struct GemmArgs {
  const float* a = nullptr;
  const float* w = nullptr;
  const float* bias = nullptr;  // [N] or null
  float* c = nullptr;
  long long lda = 0, ldw = 0, ldc = 0;
  int m = 0, n = 0, k = 0;
};

constexpr int kTileM = 128, kTileN = 128, kTileK = 32, kStages = 3, kThreads = 256;
constexpr int kChunks = kTileK / 4;  // 16-byte chunks per tile row
// one stage: the A tile, then the W tile, each [128 rows][32 k] floats
constexpr int kStageFloats = (kTileM + kTileN) * kTileK;
constexpr int kSharedBytes = kStages * kStageFloats * 4;  // 96 kB: above the 48 kB default, opted into

// Where chunk c of tile row r lives, in floats from the tile's start.
__device__ __forceinline__ int chunk_at(int r, int c) { return r * kTileK + ((c ^ ((r & 1) << 2)) << 2); }

// x -> its TF32 head, rounded to nearest with ties away from zero, as a 32-bit pattern for mma:
// half a TF32 ulp added to the magnitude bits (the sign bit is apart; a carry into the exponent
// is the correct rounding), then the 13 bits that TF32 does not keep cleared. Two integer
// operations, where cvt.rna.tf32.f32 compiles to four on sm_90 (an infinity test and a select
// besides); finite x get the same value (an infinity stays one; a NaN may come out infinite,
// still not finite).
__device__ __forceinline__ std::uint32_t tf32_head(float x) { return (__float_as_uint(x) + 0x1000u) & 0xffffe000u; }

// An fp32 operand value as the kernel's mma wants it: x = big + small with big = the TF32 head of
// x and small = x - big (exact in fp32), for kTerms 3; big only, for 1. small is handed over as
// fp32: the tensor cores read the 10 leading mantissa bits of a TF32 operand and ignore the 13
// below, so small is truncated there, an error of at most 2^-10 of small, i.e. 2^-21 of x (its
// own rounding to nearest would halve that, at two more instructions per value).
template <int kTerms>
__device__ __forceinline__ void to_operand(float x, std::uint32_t& big, std::uint32_t& small) {
  big = tf32_head(x);
  if constexpr (kTerms == 3) small = __float_as_uint(x - __uint_as_float(big));
}

// d += a b for one 16 x 8 x 8 tile (PTX ISA, "Matrix fragments for mma.m16n8k8" with .tf32).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// 16 bytes global -> shared without passing through registers; ok false writes zeros (a source
// size of 0 reads nothing, so src need only be some valid address).
__device__ __forceinline__ void copy16(float* dst, const float* src, bool ok) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(ok ? 16 : 0) : "memory");
}
__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void copies_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

// One k step's tiles into a stage: 1024 chunks of A and 1024 of W, four of each per thread, a
// tile row's 8 chunks on 8 neighbouring threads.
__device__ __forceinline__ void load_stage(const GemmArgs& g, float* stage, int m0, int n0, int k0) {
  float* sa = stage;
  float* sw = stage + kTileM * kTileK;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int idx = threadIdx.x + i * kThreads;
    const int r = idx / kChunks, c = idx % kChunks;
    const int gk = k0 + c * 4;
    const int gm = m0 + r, gn = n0 + r;
    const bool ka = gk < g.k;
    copy16(sa + chunk_at(r, c), ka && gm < g.m ? g.a + gm * g.lda + gk : g.a, ka && gm < g.m);
    copy16(sw + chunk_at(r, c), ka && gn < g.n ? g.w + gn * g.ldw + gk : g.w, ka && gn < g.n);
  }
}

template <int kTerms>
__global__ void __launch_bounds__(kThreads, 1) gemm_kernel(const GemmArgs g) {
  static_assert(kTerms == 1 || kTerms == 3, "tensor_core_gemm: 1 (TF32) or 3 (3xTF32) terms");
  extern __shared__ __align__(16) float smem[];
  const int tiles_n = (g.n + kTileN - 1) / kTileN;
  // Consecutive blocks share their A rows (n fastest), so A comes from L2 after its first read.
  const long long tile = blockIdx.x;
  const int m0 = int(tile / tiles_n) * kTileM, n0 = int(tile % tiles_n) * kTileN;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gid = lane >> 2, tig = lane & 3;  // fragment row group, thread in group
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;
  const int k_steps = (g.k + kTileK - 1) / kTileK;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < k_steps) load_stage(g, smem + s * kStageFloats, m0, n0, s * kTileK);
    copies_commit();  // an empty group where there is no step: the wait below counts groups
  }

  float acc[4][4][4] = {};
  for (int ks = 0; ks < k_steps; ++ks) {
    copies_wait<kStages - 2>();  // step ks has landed (this thread's copies) ...
    __syncthreads();             // ... everyone's, and step ks - 1's stage is free to refill
    if (ks + kStages - 1 < k_steps)
      load_stage(g, smem + ((ks + kStages - 1) % kStages) * kStageFloats, m0, n0, (ks + kStages - 1) * kTileK);
    copies_commit();
    const float* sa = smem + (ks % kStages) * kStageFloats;
    const float* sw = sa + kTileM * kTileK;
#pragma unroll 1  // unrolled, the 3xTF32 form's operands of both halves spill
    for (int half = 0; half < 2; ++half) {
      const int chunk = half * 4 + tig;
      float4 fa[4][2], fw[4];
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        const int r = wm + mt * 16 + gid;
        fa[mt][0] = *reinterpret_cast<const float4*>(sa + chunk_at(r, chunk));
        fa[mt][1] = *reinterpret_cast<const float4*>(sa + chunk_at(r + 8, chunk));
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) fw[nt] = *reinterpret_cast<const float4*>(sw + chunk_at(wn + nt * 8 + gid, chunk));
      // this mma's two k's of the thread: components 2 step and 2 step + 1 of its chunk
      const auto lo = [](const float4& v, int step) { return step ? v.z : v.x; };
      const auto hi = [](const float4& v, int step) { return step ? v.w : v.y; };
      std::uint32_t w_big[2][4][2], w_small[2][4][2];
#pragma unroll
      for (int step = 0; step < 2; ++step)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          to_operand<kTerms>(lo(fw[nt], step), w_big[step][nt][0], w_small[step][nt][0]);
          to_operand<kTerms>(hi(fw[nt], step), w_big[step][nt][1], w_small[step][nt][1]);
        }
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        float part[4][4] = {};  // these 16 k's products of the row's 4 tiles, then added to acc
        // (per 16 k's rather than per 8: half the fp32 adds; the unit test's GEMM error went from
        // 1.2x to 2.5x cuBLAS fp32's with that and the unrounded tails)
#pragma unroll
        for (int step = 0; step < 2; ++step) {
          std::uint32_t a_big[4], a_small[4];
          to_operand<kTerms>(lo(fa[mt][0], step), a_big[0], a_small[0]);  // row gid, slot tig
          to_operand<kTerms>(lo(fa[mt][1], step), a_big[1], a_small[1]);  // row gid + 8, slot tig
          to_operand<kTerms>(hi(fa[mt][0], step), a_big[2], a_small[2]);  // row gid, slot tig + 4
          to_operand<kTerms>(hi(fa[mt][1], step), a_big[3], a_small[3]);  // row gid + 8, slot tig + 4
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {
            if constexpr (kTerms == 3) {
              mma_tf32(part[nt], a_big, w_small[step][nt]);
              mma_tf32(part[nt], a_small, w_big[step][nt]);
              mma_tf32(part[nt], a_big, w_big[step][nt]);
            } else {
              mma_tf32(acc[mt][nt], a_big, w_big[step][nt]);
            }
          }
        }
        if constexpr (kTerms == 3)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[mt][nt][q] += part[nt][q];
      }
    }
  }
  copies_wait<0>();  // no copy outlives the block (the last groups are empty)

#pragma unroll
  for (int mt = 0; mt < 4; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt) {
      const int col = n0 + wn + nt * 8 + tig * 2;
      if (col >= g.n) continue;  // n is a multiple of 4, so col + 1 < n too
      const float b0 = g.bias ? g.bias[col] : 0.f, b1 = g.bias ? g.bias[col + 1] : 0.f;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = m0 + wm + mt * 16 + gid + half * 8;
        if (row >= g.m) continue;
        *reinterpret_cast<float2*>(g.c + row * g.ldc + col) =
            make_float2(acc[mt][nt][2 * half] + b0, acc[mt][nt][2 * half + 1] + b1);
      }
    }
}

// Whether the kernel takes these shapes and addresses (see the header comment).
inline bool gemm_applies(const GemmArgs& g) {
  auto aligned = [](const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; };
  return g.m >= 0 && g.n > 0 && g.k > 0 && g.n % 4 == 0 && g.k % 4 == 0 && g.lda % 4 == 0 && g.ldw % 4 == 0 &&
         g.ldc % 4 == 0 && aligned(g.a) && aligned(g.w) && aligned(g.c);
}

// Launches C = A W^T (+ bias) on `stream`; false, having launched nothing, where gemm_applies says
// no. A launch error (resources, a device without sm_80's instructions) is left for the caller's
// check (cudaGetLastError).
template <int kTerms>
bool gemm(const GemmArgs& g, cudaStream_t stream) {
  if (!gemm_applies(g)) return false;
  if (g.m == 0) return true;
  const long long tiles = (long long)((g.m + kTileM - 1) / kTileM) * ((g.n + kTileN - 1) / kTileN);
  if (tiles > 0x7fffffffLL) return false;
  // per device and cheap: set at every launch rather than tracked
  cudaFuncSetAttribute(gemm_kernel<kTerms>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSharedBytes);
  gemm_kernel<kTerms><<<unsigned(tiles), kThreads, kSharedBytes, stream>>>(g);
  return true;
}

}  // namespace edgeframe::kk::tc

#endif
