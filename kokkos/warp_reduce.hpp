// Reduce-scatter over a 32-lane warp: NV values per lane (NV a power of two, <= 32) summed over
// the warp, each lane ending with one of the NV sums.
//
// Why (ncu on the H200): the per-edge backward kernels need 2l+1 channel sums per (l, m)
// row; as 2l+1 separate warp reductions of doubles that is 5 shuffle rounds each, one after the
// other (pack backward-edge: 25 reductions per edge at L2, issue-bound at 28 % of copy). Halving
// the values at each round instead (round r exchanges NV / 2^(r+1) values with the lane 16 >> r
// away, keeping the half its lane bit selects), then a plain butterfly for the remaining rounds,
// costs NV - 1 + 5 - log2(NV) shuffles for all NV sums: 9 instead of 35 for l = 3 (NV = 8), 6
// instead of 15 for l = 1; and every lane's shuffles are independent within a round.
//
// Which sum lane λ holds (reduce_scatter_index): bit (16 >> r) of λ set means it kept the upper
// half in round r, i.e. index += NV >> (r + 1). The 32 / NV lanes that share λ's upper bits hold
// the same sum; the lowest of them (reduce_scatter_writer) writes it.
// The summation order is fixed by the lane pattern: deterministic run to run.
#pragma once

#include <Kokkos_Core.hpp>
#include <type_traits>

#include "kernel_common.hpp"  // KernelForm, team_policy, TagDeviceUpTo, with_degree_bound

namespace edgeframe::kk {

inline constexpr int kWarpLanes = 32;  // a CUDA warp

template <int NV>
KOKKOS_INLINE_FUNCTION constexpr int reduce_scatter_index(int lane) {
  int index = 0;
  for (int r = 0; (NV >> (r + 1)) >= 1; ++r)
    if (lane & (16 >> r)) index += NV >> (r + 1);
  return index;
}
template <int NV>
KOKKOS_INLINE_FUNCTION constexpr bool reduce_scatter_writer(int lane) {
  return (lane & (kWarpLanes / NV - 1)) == 0;
}

// One halving round on one lane: afterwards v[0..h) hold this lane's kept half plus the
// partner's copy of it; send(i) is what this lane gives its partner for slot i.
template <int NV>
KOKKOS_INLINE_FUNCTION double reduce_scatter_send(const double (&v)[NV], int h, bool upper, int i) {
  return upper ? v[i] : v[i + h];
}
template <int NV>
KOKKOS_INLINE_FUNCTION double reduce_scatter_keep(const double (&v)[NV], int h, bool upper, int i) {
  return upper ? v[i + h] : v[i];
}

#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)
// Device only, called by all 32 lanes of a warp together (no lane may have returned).
template <int NV>
__device__ inline double warp_reduce_scatter(double (&v)[NV], int lane) {
  static_assert(NV >= 1 && NV <= kWarpLanes && (NV & (NV - 1)) == 0, "NV: a power of two <= 32");
  constexpr unsigned kAll = 0xffffffffu;
  int offset = 16;
#pragma unroll
  for (int h = NV / 2; h >= 1; h /= 2, offset /= 2) {
    const bool upper = lane & offset;
#pragma unroll
    for (int i = 0; i < h; ++i) {
      const double got = __shfl_xor_sync(kAll, reduce_scatter_send<NV>(v, h, upper, i), offset);
      v[i] = reduce_scatter_keep<NV>(v, h, upper, i) + got;
    }
  }
  double sum = v[0];
#pragma unroll
  for (; offset >= 1; offset /= 2) sum += __shfl_xor_sync(kAll, sum, offset);
  return sum;
}
#endif

// The lanes that work on one edge in the device form of the per-edge passes, the one place the
// kernels meet the warp: on CUDA a warp (channel c on lane c % 32, sums finished by
// warp_reduce_scatter), on every other backend a single lane that already holds each whole sum.
// Launch with edge_lanes_policy: edges_per_team edges per team, one per thread, count lanes each.
template <class Exec>
struct EdgeLanes {
#if defined(KOKKOS_ENABLE_CUDA)
  static constexpr int count = std::is_same_v<Exec, Kokkos::Cuda> ? kWarpLanes : 1;
#else
  static constexpr int count = 1;
#endif
  static constexpr int edges_per_team = count == 1 ? 1 : 4;
  int index = 0;  // this lane, 0 <= index < count

  KOKKOS_INLINE_FUNCTION static EdgeLanes here() {
    EdgeLanes lanes;
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)
    if constexpr (count == kWarpLanes) lanes.index = threadIdx.x;  // Kokkos' CUDA teams put vector lanes on x
#endif
    return lanes;
  }
  // The sum of v over the lanes, on every lane (an xor butterfly: each round adds the same two
  // values on both partners, so every lane ends with the same bits).
  KOKKOS_INLINE_FUNCTION double all_sum(double v) const {
    if constexpr (count == 1) {
      return v;
    } else {
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)
      for (int offset = kWarpLanes / 2; offset >= 1; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
#endif
      return v;
    }
  }
  // Sums part[t] over the lanes for every t < NV and calls write(t, sum) once per t, on one lane
  // (all lanes must call it together: no lane may have returned).
  template <int NV, class Write>
  KOKKOS_INLINE_FUNCTION void reduce_scatter(double (&part)[NV], const Write& write) const {
    if constexpr (count == 1) {
      for (int t = 0; t < NV; ++t) write(t, part[t]);
    } else {
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)
      const double sum = warp_reduce_scatter<NV>(part, index);
      if (reduce_scatter_writer<NV>(index)) write(reduce_scatter_index<NV>(index), sum);
#endif
    }
  }
};

template <class Exec, class Tag>
Kokkos::TeamPolicy<Exec, Tag> edge_lanes_policy(const Exec& exec, int n_edges) {
  constexpr int per_team = EdgeLanes<Exec>::edges_per_team;
  return Kokkos::TeamPolicy<Exec, Tag>(exec, (n_edges + per_team - 1) / per_team, per_team, EdgeLanes<Exec>::count);
}

// Launches a per-edge pass (pack backward-edge, unrotate backward) in the given form: the device
// form on edge_lanes_policy (compiled for degrees up to with_degree_bound's, kernel_common.hpp
// TagDeviceUpTo), the host form one team per edge.
template <class Exec, class F>
void launch_edge_pass(const char* label, const Exec& exec, const F& f, int n_edges, KernelForm form) {
  if (form == KernelForm::device)
    with_degree_bound(f.lmax, [&](auto bound) {
      Kokkos::parallel_for(label, edge_lanes_policy<Exec, TagDeviceUpTo<decltype(bound)::value>>(exec, n_edges), f);
    });
  else
    Kokkos::parallel_for(label, team_policy<Exec, TagHostForm>(exec, n_edges), f);
}

// Partial sums a lane keeps in registers at most: the kernels take 2l+1 > 8 sums (l >= 4) in
// chunks of 8. NV = 16 and 32 for one chunk pushed the kernels from ~60 to 127-134 registers
// (ptxas), for every degree, since a kernel's register count is its worst path's.
inline constexpr int kMaxSlots = 8;

// Channels per lane that the unrotate backward pass's short-degree form loads into registers
// at once (unrotate_aggregate.hpp short_degree): C = 128 on a warp is one chunk.
inline constexpr int kLaneChannels = 4;

// Calls f(std::integral_constant<int, NV>{}) with NV the smallest power of two >= min(n,
// kMaxSlots) (2 never occurs: the counts are 2l + 1, odd): the per-degree kernels keep their NV
// partial sums in registers, which needs NV at compile time.
template <class F>
KOKKOS_INLINE_FUNCTION void with_pow2_slots(int n, const F& f) {
  if (n <= 1)
    f(std::integral_constant<int, 1>{});
  else if (n <= 4)
    f(std::integral_constant<int, 4>{});
  else
    f(std::integral_constant<int, kMaxSlots>{});
}

// Calls f(std::integral_constant<int, NV>{}) with NV = n for n = 1, 3, 5, 7 (2l + 1 of l <= 3)
// where Exact, kMaxSlots for n > kMaxSlots; with_pow2_slots's NV where not Exact. Exact arrays
// save registers in kernels whose heaviest degree is small (TagDeviceChannels<V, MaxL>); where
// degree 3 is in the kernel, NV = 7 weighs as much as 8.
template <bool Exact, class F>
KOKKOS_INLINE_FUNCTION void with_row_slots(int n, const F& f) {
  if constexpr (Exact) {
    if (n <= 1)
      f(std::integral_constant<int, 1>{});
    else if (n <= 3)
      f(std::integral_constant<int, 3>{});
    else if (n <= 5)
      f(std::integral_constant<int, 5>{});
    else if (n <= 7)
      f(std::integral_constant<int, 7>{});
    else
      f(std::integral_constant<int, kMaxSlots>{});
  } else {
    with_pow2_slots(n, f);
  }
}

}  // namespace edgeframe::kk
