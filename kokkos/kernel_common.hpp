// Shared pieces of the kernel headers: pass tags, view aliases, launch helpers.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <type_traits>

namespace edgeframe::kk {

// One tag per pass over the same data (STYLE.md §3).
struct TagForward {};
struct TagBackward {};
struct TagValue {};
struct TagValueAndGrad {};
struct TagForwardDegree {};  // the pack forward in the degree loop orders (LoopOrder below)
template <int V>
struct TagNodeDegree {};  // the node passes in the degree loop orders, V channels per thread

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

// Loop orders of the per-edge backward kernels:
//   rows:  one team per edge, channels over the team's lanes, dot products as team reductions
//          (team_dot); on the host a team of one whose channel loops vectorise;
//   lanes: several edges per team, one edge per thread, channels over that thread's vector
//          lanes, dot products as vector reductions (warp shuffles on a GPU, no block-wide
//          barriers). The GPU's default since 2026-11-30 (doc/gpu-notes.md); to be measured.
// lanes4: lanes, and the two node passes (unrotate forward, pack backward-node) give each thread
// 4 consecutive channels of its output row (channels % 4 == 0; else 1): the index arithmetic,
// band loads and edge loop are shared by 4 outputs. ncu (doc/gpu-notes.md) showed those passes
// issue-bound (0.68 warp instructions per cycle per scheduler) at 8 % of DRAM bandwidth. Each
// output keeps its products and their order, so lanes4 equals lanes bit for bit on the host.
// warp: lanes4, and on CUDA the two per-edge backward kernels (pack backward-edge, unrotate
// backward) sum the 2l+1 channel sums of one (l, m) row from per-lane partials in registers and
// reduce them together with a warp reduce-scatter (warp_reduce.hpp) instead of 2l+1 separate
// warp reductions (ncu: pack backward-edge issue-bound at 28 % of copy). Elsewhere the same as
// lanes4.
// degree (the device default since 2026-11-30h): warp, and (a) the two node passes give each
// thread one channel of all 2l+1 output rows of one degree (accumulators in registers), so each
// message / grad_rot element is read once per node instead of once per output row; (b) the
// pack forward keeps each lane's x rows of a degree in registers for all its output rows;
// (c) on CUDA pack backward-edge computes grad_g from the x rows it already holds for grad_band
// (grad_g = sum_{+-m} grad_u (D x), the forward's rotated value) instead of re-reading grad_u,
// band and x per output. Same products and order per element as lanes4 in (a) and (b) (bitwise
// equal on the host); (c) sums grad_g in another order. Measured (doc/benchmarks.md "Eighth
// run"): (b) and (c) 17-22 % faster at L3, (a) within +-7 % of lanes4's node passes (issue-bound
// on the edge walk, not on re-reads: the same instructions per output).
// degree4: degree whose node passes give each thread 4 consecutive channels (channels % 4 == 0;
// else 1) of all 2l+1 rows: one band load serves 4 products (lanes4's sharing) and one message
// load 2l+1 (degree's): about 2.7x fewer loads per output at l = 2. A quarter of degree's
// threads (N (lmax+1) C / 4: 65 k for 512 atoms at L3), so small systems may lose. Not measured
// yet (written 2026-11-30h after the last GPU call; doc/gpu-notes.md).
enum class LoopOrder { rows, lanes, lanes4, warp, degree, degree4 };
// The orders whose pack forward, pack backward-edge and node passes take the degree forms.
constexpr bool degree_order(LoopOrder order) { return order == LoopOrder::degree || order == LoopOrder::degree4; }
// Channels per thread of the node passes in this order for this channel count.
inline int node_channel_block(LoopOrder order, int channels) {
  const bool blocks_of_4 = order == LoopOrder::lanes4 || order == LoopOrder::warp || order == LoopOrder::degree4;
  return blocks_of_4 && channels % 4 == 0 ? 4 : 1;
}
// Whether the per-edge backward kernels take their warp reduce-scatter form (CUDA only).
template <class Exec>
constexpr bool warp_edge_kernels(LoopOrder order) {
#if defined(KOKKOS_ENABLE_CUDA)
  return (order == LoopOrder::warp || degree_order(order)) && std::is_same_v<Exec, Kokkos::Cuda>;
#else
  (void)order;
  return false;
#endif
}
// Launches a node pass in the lanes orders: one iteration per (node, row, block of V channels),
// Tag<V> with V = node_channel_block (f: a functor with lmax and channels).
template <template <int> class Tag, class Exec, class F>
void launch_node_lanes(const char* label, const Exec& exec, const F& f, int n_nodes, LoopOrder order) {
  if (node_channel_block(order, f.channels) == 4)
    Kokkos::parallel_for(label, node_element_range<Exec, Tag<4>>(exec, n_nodes, f.lmax, f.channels / 4), f);
  else
    Kokkos::parallel_for(label, node_element_range<Exec, Tag<1>>(exec, n_nodes, f.lmax, f.channels), f);
}
// Launches a node pass in the degree orders: one iteration per (node, degree l, block of V
// channels), index ((a (lmax + 1) + l) C / V + block), 64-bit, Tag<V> with V =
// node_channel_block (f: a functor with lmax and channels).
template <template <int> class Tag, class Exec, class F>
void launch_node_degree(const char* label, const Exec& exec, const F& f, int n_nodes, LoopOrder order) {
  const std::int64_t items = std::int64_t(n_nodes) * (f.lmax + 1) * f.channels;
  if (node_channel_block(order, f.channels) == 4)
    Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec, Tag<4>, Kokkos::IndexType<std::int64_t>>(exec, 0, items / 4), f);
  else
    Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec, Tag<1>, Kokkos::IndexType<std::int64_t>>(exec, 0, items), f);
}
template <class Exec>
constexpr LoopOrder default_loop_order() {
  // Devices: degree4 (lanes4 measured on the H200, 2026-11-30f: L2 tf32 step 25.9 -> 22.6 ms, L3
  // fp32 110.4 -> 100.6 ms against lanes, doc/benchmarks.md "Sixth run"; warp against lanes4:
  // "Seventh run"; degree against warp, 2026-11-30h: L3 fp32 99.8 -> 90.0 ms, bcc Cu 4394 L3
  // tf32 143.1 -> 126.7 ms, "Eighth run"; degree4 against degree, 2026-11-30j, A/B in one gate
  // run, medians of 21 steps: 512-atom L2 / L3 steps 0.5-5.5 % faster, bcc Cu 4394 L3 tf32
  // 125.35 -> 120.93 ms, "Tenth run", by a rule fixed before the measurement).
  return std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace> ? LoopOrder::rows : LoopOrder::degree4;
}
// lanes: edges per team and vector length (a warp on a GPU; 1 on the host, where the variant
// runs only to be tested).
template <class Exec>
constexpr int lanes_edges_per_team() {
  return std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace> ? 1 : 4;
}
template <class Exec>
constexpr int lanes_vector_length() {
  return std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace> ? 1 : 32;
}
inline constexpr int kWarpLanes = 32;  // a CUDA warp: the vector length of the warp order's kernels

// Launches a per-edge backward pass in the lanes orders: edges_per_team edges per team, one
// per thread, channels on its vector lanes (a warp each on a GPU); the warp reduce-scatter form
// TagWarp where warp_edge_kernels says so (TagWarpDegree in the degree order), else TagLanes.
// f: a functor with n_edges and edges_per_team (set here on a copy).
template <class TagLanes, class TagWarp, class TagWarpDegree = TagWarp, class Exec, class F>
void launch_edge_lanes(const char* label, const Exec& exec, F f, int n_edges, LoopOrder order) {
  f.n_edges = n_edges;
  f.edges_per_team = lanes_edges_per_team<Exec>();
  const int league = (n_edges + f.edges_per_team - 1) / f.edges_per_team;
  if constexpr (lanes_vector_length<Exec>() == kWarpLanes) {  // the warp form needs whole warps
    if (warp_edge_kernels<Exec>(order)) {
      if (degree_order(order))
        Kokkos::parallel_for(label, Kokkos::TeamPolicy<Exec, TagWarpDegree>(exec, league, f.edges_per_team, kWarpLanes), f);
      else
        Kokkos::parallel_for(label, Kokkos::TeamPolicy<Exec, TagWarp>(exec, league, f.edges_per_team, kWarpLanes), f);
      return;
    }
  }
  Kokkos::parallel_for(label, Kokkos::TeamPolicy<Exec, TagLanes>(exec, league, f.edges_per_team,
                                                                 lanes_vector_length<Exec>()), f);
}

// sum_{c < n} f(c) in double, the same on every lane of the team. On the host (a team of one)
// eight partial sums in fixed order let the loop vectorise without reassociating anything
// run to run; on devices a team reduction.
template <class Team, class F>
KOKKOS_INLINE_FUNCTION double team_dot(const Team& team, int n, const F& f) {
  double result = 0.0;
  KOKKOS_IF_ON_HOST((
    (void)team;
    double acc[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    int c = 0;
    for (; c + 8 <= n; c += 8)
      for (int q = 0; q < 8; ++q) acc[q] += f(c + q);
    for (int q = 0; c + q < n; ++q) acc[q] += f(c + q);
    result = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  ))
  KOKKOS_IF_ON_DEVICE((
    Kokkos::parallel_reduce(Kokkos::TeamVectorRange(team, n), [&](int c, double& sum) { sum += f(c); }, result);
  ))
  return result;
}

}  // namespace edgeframe::kk
