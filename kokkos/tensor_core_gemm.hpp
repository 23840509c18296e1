// A tiled fp32 GEMM on CUDA tensor cores (mma.sync m16n8k8 TF32, sm_80 and newer), for the split
// precision mode: C = A B (+ bias) with each fp32 operand split in registers into a TF32 head and
// a TF32 tail, x = big + small, and three tensor-core products per tile,
//   A B ~ big_A small_B + small_A big_B + big_A big_B      (small_A small_B, ~2^-22 of it, left out)
// fp32's accuracy at tensor-core speed (doc/engine.md "Precision modes"). The tensor cores add
// into their fp32 accumulator rounding toward zero (Ootomo and Yokota, "Recovering single
// precision accuracy from Tensor Cores while surpassing the FP32 theoretical peak performance",
// IJHPCA 2022), which over K = 1024 would bias a sum well beyond fp32's error; so the three
// products of each 8 k's are summed by the tensor cores from zero, small terms first, and added to
// the running sum by an ordinary fp32 add (round to nearest): one rounding toward zero per 8 k's,
// of at most an ulp of their own sum. kTerms = 1 keeps only big_A big_B, summed directly: plain
// TF32, for measuring the tile loop itself.
//
// Why a kernel of our own: formed from torch ops (gemm.cpp's fallback) the split costs two passes
// over every operand and three GEMMs that each round their result to fp32 in memory, so the split
// mode took as long as fp32 (doc/performance.md "Precision modes"); here every operand is read
// once and split where it is used.
//
// Shapes (all row-major with a row stride, unit column stride; the caller checks):
//   A [M, K] (lda), C [M, N] (ldc; a column range of a wider matrix is fine), bias [N] or null,
//   B either [K, N] (b_kn: element (k, n) at b[k ldb + n]) or stored as its transpose W [N, K]
//   (element (k, n) at b[n ldb + k]: B = W^T, the forward of a linear layer).
//   K and N multiples of 4, lda / ldb / ldc multiples of 4, every pointer 16-byte aligned (float4
//   loads and float2 stores); M, N, K otherwise free (tiles past the edges are zero-filled).
//
// Tiling: a block of 256 threads computes a 128 x 128 tile of C in k steps of 16; its 8 warps
// form a 2 x 4 grid of 64 x 32 warp tiles (4 x 4 mma tiles of 16 x 8). Global -> registers ->
// shared memory, double-buffered: the next k step's loads are in flight while this one computes.
// Shared rows are padded so that the fragment loads of a warp hit 32 different banks.
#pragma once

#if defined(__CUDACC__)  // nvcc (the engine's CUDA builds compile with nvcc_wrapper)

#include <cstdint>  // nvcc includes the CUDA runtime's declarations itself

namespace edgeframe::kk::tc {

struct GemmArgs {
  const float* a = nullptr;
  const float* b = nullptr;
  const float* bias = nullptr;  // [N] or null
  float* c = nullptr;
  long long lda = 0, ldb = 0, ldc = 0;
  int m = 0, n = 0, k = 0;
  bool b_kn = false;  // B stored [K, N]; else as W [N, K]
};

constexpr int kTileM = 128, kTileN = 128, kTileK = 16, kThreads = 256;
constexpr int kPadK = kTileK + 4;   // row length of a [rows][k] shared tile: conflict-free fragment loads
constexpr int kPadN = kTileN + 8;   // row length of a [k][n] shared tile: the same for B stored [K, N]

// x -> TF32 (round to nearest, ties away), as a 32-bit pattern for mma.
__device__ __forceinline__ std::uint32_t to_tf32(float x) {
  std::uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
}

// x = big + small with big = TF32(x) and small = TF32(x - big) (x - big is exact in fp32).
__device__ __forceinline__ void split_tf32(float x, std::uint32_t& big, std::uint32_t& small) {
  big = to_tf32(x);
  small = to_tf32(x - __uint_as_float(big));
}

// An fp32 operand value as the kernel's mma wants it: split (kTerms 3) or rounded (kTerms 1, small
// left unset).
template <int kTerms>
__device__ __forceinline__ void to_operand(float x, std::uint32_t& big, std::uint32_t& small) {
  if constexpr (kTerms == 3)
    split_tf32(x, big, small);
  else
    big = to_tf32(x);
}

// d += a b for one 16 x 8 x 8 tile (PTX ISA, "Matrix fragments for mma.m16n8k8" with .tf32).
__device__ __forceinline__ void mma_tf32(float (&d)[4], const std::uint32_t (&a)[4], const std::uint32_t (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

template <bool kBKN>
struct SharedTiles {
  float a[2][kTileM][kPadK];
  // B as [n][k] (stored W [N, K]) or [k][n] (stored [K, N]), whichever its global rows give.
  float b[2][kBKN ? kTileK : kTileN][kBKN ? kPadN : kPadK];
};

// One k step's global loads of a thread: two float4 of A and two of B (512 float4 each per tile).
struct Staged {
  float4 a[2], b[2];
};

__device__ __forceinline__ float4 load4(const float* p, bool ok) {
  return ok ? *reinterpret_cast<const float4*>(p) : make_float4(0.f, 0.f, 0.f, 0.f);
}

// Where A's elements come from: PlainA reads A [M, K] at row stride lda. Another loader (a type
// with the same load) computes them from other tensors as the tile is loaded, which is how a
// producer pass can be fused into the GEMM (bench/tensor_core_gemm_bench.cu measures one: the
// SO(2) gate in the second linear's A).
struct PlainA {
  __device__ __forceinline__ float4 load(const GemmArgs& g, int gm, int gk, bool ok) const {
    return load4(g.a + gm * g.lda + gk, ok);
  }
};

template <bool kBKN, class ALoad>
__device__ __forceinline__ void load_global(const GemmArgs& g, const ALoad& aload, int m0, int n0, int k0, Staged& s) {
  const int t = threadIdx.x;
  for (int i = 0; i < 2; ++i) {
    const int idx = t + i * kThreads;  // 0..511
    // A (and B stored [N, K]): 128 rows of 16, a row's 4 float4 on 4 neighbouring threads
    const int row = idx >> 2, kq = (idx & 3) * 4;
    const int gm = m0 + row, gk = k0 + kq;
    s.a[i] = aload.load(g, gm, gk, gm < g.m && gk < g.k);
    if constexpr (kBKN) {
      // B stored [K, N]: 16 rows of 128, a row's 32 float4 on one warp
      const int kr = idx >> 5, nq = (idx & 31) * 4;
      const int gkb = k0 + kr, gn = n0 + nq;
      s.b[i] = load4(g.b + gkb * g.ldb + gn, gkb < g.k && gn < g.n);
    } else {
      const int gn = n0 + row;
      s.b[i] = load4(g.b + gn * g.ldb + gk, gn < g.n && gk < g.k);
    }
  }
}

template <bool kBKN>
__device__ __forceinline__ void store_shared(SharedTiles<kBKN>& sh, int buf, const Staged& s) {
  const int t = threadIdx.x;
  for (int i = 0; i < 2; ++i) {
    const int idx = t + i * kThreads;
    const int row = idx >> 2, kq = (idx & 3) * 4;
    *reinterpret_cast<float4*>(&sh.a[buf][row][kq]) = s.a[i];
    if constexpr (kBKN)
      *reinterpret_cast<float4*>(&sh.b[buf][idx >> 5][(idx & 31) * 4]) = s.b[i];
    else
      *reinterpret_cast<float4*>(&sh.b[buf][row][kq]) = s.b[i];
  }
}

template <bool kBKN>
__device__ __forceinline__ float b_at(const SharedTiles<kBKN>& sh, int buf, int k, int n) {
  if constexpr (kBKN)
    return sh.b[buf][k][n];
  else
    return sh.b[buf][n][k];
}

template <int kTerms, bool kBKN, class ALoad>
__global__ void __launch_bounds__(kThreads) gemm_kernel(const GemmArgs g, const ALoad aload) {
  static_assert(kTerms == 1 || kTerms == 3, "tensor_core_gemm: 1 (TF32) or 3 (3xTF32) terms");
  __shared__ __align__(16) SharedTiles<kBKN> sh;
  const int tiles_n = (g.n + kTileN - 1) / kTileN;
  // Consecutive blocks share their A rows (n fastest), so A comes from L2 after its first read.
  const long long tile = blockIdx.x;
  const int m0 = int(tile / tiles_n) * kTileM, n0 = int(tile % tiles_n) * kTileN;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gid = lane >> 2, tig = lane & 3;       // fragment row group, thread in group
  const int wm = (warp >> 2) * 64, wn = (warp & 3) * 32;

  float acc[4][4][4] = {};
  Staged st;
  load_global<kBKN>(g, aload, m0, n0, 0, st);
  store_shared<kBKN>(sh, 0, st);
  __syncthreads();
  const int k_steps = (g.k + kTileK - 1) / kTileK;
  for (int ks = 0; ks < k_steps; ++ks) {
    const int buf = ks & 1;
    const bool more = ks + 1 < k_steps;
    if (more) load_global<kBKN>(g, aload, m0, n0, (ks + 1) * kTileK, st);
#pragma unroll
    for (int kk = 0; kk < kTileK; kk += 8) {
      float part[4][4][4] = {};  // these 8 k's three products (3xTF32), then added to acc
      std::uint32_t a_big[4][4], a_small[4][4], b_big[4][2], b_small[4][2];
#pragma unroll
      for (int mt = 0; mt < 4; ++mt) {
        const int r = wm + mt * 16 + gid;
        const float v[4] = {sh.a[buf][r][kk + tig], sh.a[buf][r + 8][kk + tig], sh.a[buf][r][kk + tig + 4],
                            sh.a[buf][r + 8][kk + tig + 4]};
#pragma unroll
        for (int q = 0; q < 4; ++q) to_operand<kTerms>(v[q], a_big[mt][q], a_small[mt][q]);
      }
#pragma unroll
      for (int nt = 0; nt < 4; ++nt) {
        const int c = wn + nt * 8 + gid;
        const float v[2] = {b_at<kBKN>(sh, buf, kk + tig, c), b_at<kBKN>(sh, buf, kk + tig + 4, c)};
#pragma unroll
        for (int q = 0; q < 2; ++q) to_operand<kTerms>(v[q], b_big[nt][q], b_small[nt][q]);
      }
#pragma unroll
      for (int mt = 0; mt < 4; ++mt)
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          if constexpr (kTerms == 3) {
            // the small terms first, the big one last: only the last add rounds at the part's
            // full size (toward zero, by at most one ulp of these 8 k's sum)
            mma_tf32(part[mt][nt], a_big[mt], b_small[nt]);
            mma_tf32(part[mt][nt], a_small[mt], b_big[nt]);
            mma_tf32(part[mt][nt], a_big[mt], b_big[nt]);
          } else {
            mma_tf32(acc[mt][nt], a_big[mt], b_big[nt]);
          }
        }
      if constexpr (kTerms == 3) {
#pragma unroll
        for (int mt = 0; mt < 4; ++mt)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[mt][nt][q] += part[mt][nt][q];
      }
    }
    if (more) store_shared<kBKN>(sh, buf ^ 1, st);
    __syncthreads();
  }

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
  return g.m >= 0 && g.n > 0 && g.k > 0 && g.n % 4 == 0 && g.k % 4 == 0 && g.lda % 4 == 0 && g.ldb % 4 == 0 &&
         g.ldc % 4 == 0 && aligned(g.a) && aligned(g.b) && aligned(g.c);
}

// Launches C = A B (+ bias) on `stream`; false, having launched nothing, where gemm_applies says no.
template <int kTerms, class ALoad = PlainA>
bool gemm(const GemmArgs& g, cudaStream_t stream, const ALoad& aload = {}) {
  if (!gemm_applies(g)) return false;
  if (g.m == 0) return true;
  const long long tiles = (long long)((g.m + kTileM - 1) / kTileM) * ((g.n + kTileN - 1) / kTileN);
  if (tiles > 0x7fffffffLL) return false;
  if (g.b_kn)
    gemm_kernel<kTerms, true, ALoad><<<unsigned(tiles), kThreads, 0, stream>>>(g, aload);
  else
    gemm_kernel<kTerms, false, ALoad><<<unsigned(tiles), kThreads, 0, stream>>>(g, aload);
  return true;
}

}  // namespace edgeframe::kk::tc

#endif
