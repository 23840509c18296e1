// Shared pieces of the kernel headers: pass tags, view aliases, launch helpers.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <type_traits>

#include "band_layout.hpp"  // kMaxL

namespace edgeframe::kk {

// One tag per pass over the same data (STYLE.md §3).
struct TagForward {};
struct TagBackward {};
struct TagValue {};
struct TagValueAndGrad {};

// Unroll hint for the register-array loops of the device kernels (nvcc); host compilers, which
// do not know the pragma and unroll constant-trip loops themselves, see nothing.
#if defined(__CUDA_ARCH__)
#define EDGEFRAME_UNROLL _Pragma("unroll")
#else
#define EDGEFRAME_UNROLL
#endif

// Range policy on an execution-space instance, with a pass tag.
template <class Exec, class Tag = void>
using Range = std::conditional_t<std::is_void_v<Tag>, Kokkos::RangePolicy<Exec, Kokkos::IndexType<int>>,
                                 Kokkos::RangePolicy<Exec, Tag, Kokkos::IndexType<int>>>;

template <class T, class Exec>
using View1 = Kokkos::View<T*, Kokkos::LayoutRight, typename Exec::memory_space>;
template <class T, class Exec>
using View2 = Kokkos::View<T**, Kokkos::LayoutRight, typename Exec::memory_space>;
template <class T, class Exec>
using View3 = Kokkos::View<T***, Kokkos::LayoutRight, typename Exec::memory_space>;
// [n, 3] Cartesian vectors.
template <class T, class Exec>
using Vec3View = Kokkos::View<T* [3], Kokkos::LayoutRight, typename Exec::memory_space>;

// One iteration per element of a node-feature array [N, (lmax+1)^2, C] (band_layout.hpp
// node_element), 64-bit: N D C passes 2^31 at ~1 M atoms for L = 3, C = 128.
template <class Exec, class Tag>
Kokkos::RangePolicy<Exec, Tag, Kokkos::IndexType<std::int64_t>> node_element_range(const Exec& exec, int n_nodes,
                                                                                   int lmax, int channels) {
  return {exec, 0, std::int64_t(n_nodes) * (lmax + 1) * (lmax + 1) * channels};
}

// Team policy for the channel-vectorised kernels: one thread per team on host backends (the
// channel loops vectorise; dot products use team_dot's fixed-order partial sums), the
// backend's choice on devices.
template <class Exec, class Tag>
Kokkos::TeamPolicy<Exec, Tag> team_policy(const Exec& exec, int league) {
  if constexpr (std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace>)
    return Kokkos::TeamPolicy<Exec, Tag>(exec, league, 1);
  else
    return Kokkos::TeamPolicy<Exec, Tag>(exec, league, Kokkos::AUTO);
}

// The two forms of each edge-frame pass (edge_frame_pack.hpp, unrotate_aggregate.hpp): one for
// host backends, one for devices, each the fastest measured there (doc/performance.md "Kernel
// forms"). Both compile and run on every backend, so the tests check each against the plain
// loops and against the other on the same execution space (test_pack_unrotate.cpp).
//   host:   one team per edge (per node in the node passes), channels over the team's vector
//           lanes, dot products by team_dot; on the host a team of one whose channel loops
//           vectorise.
//   device: the per-edge backward passes put one edge on a group of lanes (EdgeLanes: a warp on
//           CUDA), channel c on lane c % lanes, and keep the 2l+1 partial sums of a band row in
//           registers, finished by one reduce-scatter; the pack forward keeps the 2l+1 x rows of a
//           degree in registers for all its output rows; the node passes give each thread all
//           2l+1 output rows of one degree for 4 consecutive channels (channels % 4 == 0, else 1),
//           so each band entry serves 4 products and each message element 2l+1. For lmax <= 2 the
//           pack forward and the unrotate backward (and the gate, so2_gate.hpp) load every input
//           of a thread before its first store: stores may alias the inputs as far as the
//           compiler knows, so loads after a store wait in program order.
enum class KernelForm { host, device };
template <class Exec>
constexpr KernelForm native_form() {
  return std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace> ? KernelForm::host : KernelForm::device;
}
struct TagHostForm {};
struct TagDeviceForm {};
// The device form compiled for degrees up to MaxL: a kernel's register count is that of its
// heaviest path, and with MaxL = 2 the paths of degree 3 and of l >= 4 are not in the kernel.
// ptxas (sm_90, float): pack backward-edge 96 registers instead of 124, unrotate backward 56
// instead of 64, the node passes (with exact register arrays, with_row_slots) 66 and 59 instead
// of 80 and 75: one more block of 128 threads per SM each. The launchers take MaxL = kShortDegrees for lmax <=
// 2 (UMA-S, eSEN-sm, the L2 shape), kMaxL otherwise.
inline constexpr int kShortDegrees = 2;
// Calls f(std::integral_constant<int, MaxL>{}) with the degree bound the launchers compile for.
template <class F>
void with_degree_bound(int lmax, const F& f) {
  if (lmax <= kShortDegrees)
    f(std::integral_constant<int, kShortDegrees>{});
  else
    f(std::integral_constant<int, kMaxL>{});
}
template <int MaxL>
struct TagDeviceUpTo {};  // the per-edge backward passes
template <int V, int MaxL>
struct TagDeviceChannels {};  // the node passes, V consecutive channels per thread

// Channels per thread of the device form's node passes.
inline int device_channel_block(int channels) { return channels % 4 == 0 ? 4 : 1; }

// Threads of a device-form node pass with one thread per output element: one per (node, degree,
// block of device_channel_block channels).
inline std::int64_t node_pass_threads(int n_nodes, int lmax, int channels) {
  return std::int64_t(n_nodes) * (lmax + 1) * channels / device_channel_block(channels);
}

// Threads per output element of the pack's backward node pass (device form): with 2, a node's
// sender edges and its receiver edges are summed on two threads that add their partial sums into
// the zeroed output. Two adds onto zero commute, so the result does not depend on which lands
// first: still deterministic. Edges that add exact zeros (beyond r_cut in a graph kept with a
// skin) leave both parts' sums as they were (Evaluator.EdgesBeyondTheCutoffAddNothing); a split
// of one edge list into halves summed in Real would not (the unrotate forward pass sums its
// parts in double instead: edge_list_parts). Taken when
// the unsplit pass has fewer threads than the device runs at once (small systems: 512 atoms at
// L2, C 128 give 49 152 threads against the H200's 270 336), where ncu found the node passes at
// 13-15 % occupancy (doc/performance.md "Kernel forms").
template <class Exec>
int node_pass_split(const Exec& exec, int n_nodes, int lmax, int channels) {
  return node_pass_threads(n_nodes, lmax, channels) < std::int64_t(exec.concurrency()) ? 2 : 1;
}

// Lanes per output element of the unrotate forward pass (device form, unrotate_aggregate.hpp):
// 1, or 2 or 4 adjacent lanes that sum contiguous parts of a node's edge list in double and add
// them over the lanes (sum_over_parts; warp shuffles: CUDA only). The most parts, up to 4, that
// keep the pass at or below the threads the device runs at once (512 atoms at L2, C 128: 49 152
// threads without parts, 196 608 with 4, against the H200's 270 336); 1 where the pass without
// parts fills the device. The pack's backward node pass keeps its sender | receiver split
// (node_pass_split): the same parts there were slower (doc/performance.md "Kernel forms").
template <class Exec>
int edge_list_parts(const Exec& exec, int n_nodes, int lmax, int channels) {
#if defined(KOKKOS_ENABLE_CUDA)
  if constexpr (std::is_same_v<Exec, Kokkos::Cuda>) {
    const std::int64_t threads = node_pass_threads(n_nodes, lmax, channels);
    const std::int64_t room = std::int64_t(exec.concurrency());
    return threads * 4 <= room ? 4 : threads * 2 <= room ? 2 : 1;
  }
#endif
  (void)exec, (void)n_nodes, (void)lmax, (void)channels;
  return 1;
}

// An element of the parted unrotate forward pass (edge_list_parts): sum_part(q, out) writes
// part q of P of the element's sum into out. Device: this lane's part s, then the sum over the P
// adjacent lanes by butterfly rounds with the lanes 1 and 2 away, so that every lane ends with
// ((p0 + p1) + (p2 + p3)) bit for bit (addition commutes). AllParts (host backends, which have
// no lanes to add over; the tests): every part on this lane, added in the same tree. P = 1: the
// one part.
template <bool AllParts, int NV, int V, class Acc, class SumPart>
KOKKOS_INLINE_FUNCTION void sum_over_parts(Acc (&acc)[NV][V], int s, int P, const SumPart& sum_part) {
  if constexpr (AllParts) {
    Acc part[4][NV][V];
    for (int q = 0; q < P; ++q) sum_part(q, part[q]);
    for (int t = 0; t < NV; ++t)
      for (int v = 0; v < V; ++v)
        acc[t][v] = P == 1   ? part[0][t][v]
                    : P == 2 ? part[0][t][v] + part[1][t][v]
                             : (part[0][t][v] + part[1][t][v]) + (part[2][t][v] + part[3][t][v]);
  } else {
    sum_part(s, acc);
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)
    if (P > 1) {
      // Kokkos' range policy puts consecutive indices on consecutive threads of a block (its
      // threadIdx.y on CUDA, blockDim.x 1), in blocks of a multiple of 32 threads.
      const unsigned lane = (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32u;
      const unsigned group = ((1u << P) - 1u) << (lane & ~unsigned(P - 1));
      for (int offset = 1; offset < P; offset *= 2)
        for (int t = 0; t < NV; ++t)
          for (int v = 0; v < V; ++v) acc[t][v] += __shfl_xor_sync(group, acc[t][v], offset);
    }
#endif
  }
}

// Launches a device-form node pass: one iteration per (node, degree l, part s of the edge list,
// block of V channels), tag TagDeviceChannels<V, MaxL> with V = device_channel_block and MaxL
// from with_degree_bound, 64-bit indices; split: parts of the edge list per element, which the
// functor maps to indices itself (the pack's backward node pass: band_layout.hpp degree_element
// with split 1 or 2, output zeroed first; the unrotate forward pass: adjacent lanes, 1, 2 or 4).
// f: a functor with lmax and channels.
template <class Exec, class F>
void launch_device_node_pass(const char* label, const Exec& exec, const F& f, int n_nodes, int split = 1) {
  const std::int64_t items = std::int64_t(n_nodes) * (f.lmax + 1) * f.channels * split;
  using Index = Kokkos::IndexType<std::int64_t>;
  with_degree_bound(f.lmax, [&](auto bound) {
    constexpr int MaxL = decltype(bound)::value;
    if (device_channel_block(f.channels) == 4)
      Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec, TagDeviceChannels<4, MaxL>, Index>(exec, 0, items / 4), f);
    else
      Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec, TagDeviceChannels<1, MaxL>, Index>(exec, 0, items), f);
  });
}

// Writes a node pass's result: a store, or with the edge list split an add onto the zeroed
// element (node_pass_split).
template <class Real>
KOKKOS_INLINE_FUNCTION void put_node_result(Real& out, Real value, int split) {
  if (split == 1)
    out = value;
  else
    Kokkos::atomic_add(&out, value);
}

// sum_{c < n} f(c) in double, the same on every lane of the team. On the host (a team of one)
// eight partial sums in fixed order let the loop vectorise without reassociating anything
// run to run; on devices a team reduction.
template <class Team, class F>
KOKKOS_INLINE_FUNCTION double team_dot(const Team& team, int n, const F& f) {
  double result = 0.0;
  KOKKOS_IF_ON_HOST(((void)team; double acc[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}; int c = 0;
                     for (; c + 8 <= n; c += 8) for (int q = 0; q < 8; ++q) acc[q] += f(c + q);
                     for (int q = 0; c + q < n; ++q) acc[q] += f(c + q);
                     result = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));))
  KOKKOS_IF_ON_DEVICE((Kokkos::parallel_reduce(
                           Kokkos::TeamVectorRange(team, n), [&](int c, double& sum) { sum += f(c); }, result);))
  return result;
}

}  // namespace edgeframe::kk
