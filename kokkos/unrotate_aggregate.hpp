// unrotate_aggregate: rotate each edge's message back with the same band, apply the envelope
// and sum into the receiver (doc/model.md 3g):
//   agg[i, (l, m'), c] = scale * sum_{e into i} u(r_e) sum_{|m| <= min(l, mmax)} D^l_{m m'}(R_e) w[e, packed_row(l, m), c]
// with scale = 1 / avg_neighbors. The sum over edges is a segmented sum over the receiver CSR
// (graph.hpp), in edge order: no atomics, deterministic. Backward per edge: grad_w, grad_band,
// grad_env, each element with a single writer.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

#include "band_layout.hpp"
#include "kernel_common.hpp"
#include "warp_reduce.hpp"

namespace edgeframe::kk {

struct TagBackwardLanes {};
struct TagBackwardWarp {};  // CUDA only (kernel_common.hpp warp_edge_kernels)
template <int V>
struct TagForwardLanes {};  // V channels per thread (kernel_common.hpp node_channel_block)

template <class Exec, class Real>
struct UnrotateAggregate {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  View3<const Real, Exec> w;         // [E, K, C] packed messages
  View2<const Real, Exec> band;      // [E, band_size]
  View1<const Real, Exec> env;       // [E] envelope u(r_e)
  View1<const int, Exec> recv;       // [E]
  View1<const int, Exec> recv_offsets;  // [N+1]
  View3<Real, Exec> agg;             // [N, D, C] forward output (overwritten)
  View3<const Real, Exec> grad_agg;  // [N, D, C] backward input
  View3<Real, Exec> grad_w;          // [E, K, C] backward output (overwritten)
  View2<Real, Exec> grad_band;       // [E, band_size] backward output (overwritten)
  View1<Real, Exec> grad_env;        // [E] backward output (overwritten)
  double scale;                      // 1 / avg_neighbors
  int lmax, mmax, channels;
  int n_edges = 0, edges_per_team = 1;  // backward in the lanes order (set by the launcher)

  // Per node a: walk its incoming edges in CSR order, accumulating into its own output row.
  KOKKOS_INLINE_FUNCTION void operator()(TagForward, const Team& team) const {
    const int a = team.league_rank(), C = channels, D = (lmax + 1) * (lmax + 1);
    Real* KOKKOS_RESTRICT out = &agg(a, 0, 0);  // [D, C], this team's rows
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, D * C), [&](int q) { out[q] = Real(0); });
    team.team_barrier();  // zeroed with another lane mapping than the accumulation below
    for (int e = recv_offsets(a); e < recv_offsets(a + 1); ++e) {
      const Real se = static_cast<Real>(scale) * env(e);
      for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
        const int k = band_k(l, mmax);
        for (int m = -k; m <= k; ++m) {
          const Real* KOKKOS_RESTRICT wr = &w(e, packed_row(l, m, lmax), 0);
          const int boff = off + (m + k) * (2 * l + 1);
          for (int mp = -l; mp <= l; ++mp) {
            const Real d = se * band(e, boff + mp + l);
            Real* KOKKOS_RESTRICT o = out + (l * l + l + mp) * C;
            Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) { o[c] += d * wr[c]; });
          }
        }
      }
    }
  }

  // The same forward in the lanes order: one thread per output element (node a, row (l, m'),
  // channel c; or V consecutive channels c0 .. c0 + V - 1), accumulating in registers over a's
  // incoming edges in CSR order and, per edge, over m: the products and their order per element
  // are the rows order's, with no read-modify-write of the output row in memory and D C / V
  // times more threads (the rows order ran one team per node: 512 teams at 512 atoms, 6 % of
  // copy bandwidth on the H200). Index 64-bit.
  template <int V>
  KOKKOS_INLINE_FUNCTION void operator()(TagForwardLanes<V>, std::int64_t i) const {
    const auto [a, q, l, mp, cb] = node_element(i, lmax, channels / V);
    const int c0 = cb * V, k = band_k(l, mmax), off = band_offset(l, mmax);
    Real acc[V];
    for (int v = 0; v < V; ++v) acc[v] = Real(0);
    for (int e = recv_offsets(a); e < recv_offsets(a + 1); ++e) {
      const Real se = static_cast<Real>(scale) * env(e);
      for (int m = -k; m <= k; ++m) {
        const Real d = se * band(e, off + (m + k) * (2 * l + 1) + mp + l);
        const Real* KOKKOS_RESTRICT wr = &w(e, packed_row(l, m, lmax), c0);
        for (int v = 0; v < V; ++v) acc[v] += d * wr[v];
      }
    }
    for (int v = 0; v < V; ++v) agg(a, q, c0 + v) = acc[v];
  }

  // The same forward in the degree orders: one thread per (node a, degree l, block of V
  // channels c0..c0+V-1) keeps all 2l+1 output rows (l, m') in registers (chunks of kMaxSlots
  // for l >= 4) and reads each message element w[e, (l, m), c] once per chunk, where the lanes
  // orders read it once per output row; with V = 4 (degree4) each band entry serves 4 channels.
  // Per element the lanes order's products in its order (edges in CSR order, then m). In a warp
  // the lanes share a and l (when C / V is a multiple of 32): band, env and the CSR are
  // broadcast loads.
  template <int V>
  KOKKOS_INLINE_FUNCTION void operator()(TagNodeDegree<V>, std::int64_t i) const {
    const auto [a, l, cb] = degree_element(i, lmax, channels / V);
    const int c0 = cb * V, k = band_k(l, mmax), off = band_offset(l, mmax), nrow = 2 * l + 1;
    with_pow2_slots(nrow, [&](auto slots) {
      constexpr int NV = decltype(slots)::value;
      for (int t0 = 0; t0 < nrow; t0 += NV) {
        Real acc[NV][V];
EDGEFRAME_UNROLL
        for (int t = 0; t < NV; ++t)
          for (int v = 0; v < V; ++v) acc[t][v] = Real(0);
        for (int e = recv_offsets(a); e < recv_offsets(a + 1); ++e) {
          const Real se = static_cast<Real>(scale) * env(e);
          for (int m = -k; m <= k; ++m) {
            Real wv[V];
            for (int v = 0; v < V; ++v) wv[v] = w(e, packed_row(l, m, lmax), c0 + v);
            const int b = off + (m + k) * nrow + t0;
EDGEFRAME_UNROLL
            for (int t = 0; t < NV; ++t)
              if (t0 + t < nrow) {
                const Real d = se * band(e, b + t);
                for (int v = 0; v < V; ++v) acc[t][v] += d * wv[v];
              }
          }
        }
EDGEFRAME_UNROLL
        for (int t = 0; t < NV; ++t)
          if (t0 + t < nrow)
            for (int v = 0; v < V; ++v) agg(a, l * l + t0 + t, c0 + v) = acc[t][v];
      }
    });
  }

  // Per edge e: with G = grad_agg[recv(e)] and rg[row, c] = sum_{m'} D_{m m'} G[(l, m'), c],
  //   grad_w = scale u rg,  grad_env = scale sum_{row, c} w rg,  grad_band[(l, m, m')] = scale u sum_c w G.
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, const Team& team) const {
    const int e = team.league_rank(), i = recv(e), C = channels;
    const Real se = static_cast<Real>(scale) * env(e);
    double genv = 0.0;
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      for (int m = -k; m <= k; ++m) {
        const int prow = packed_row(l, m, lmax), boff = off + (m + k) * (2 * l + 1);
        Real* KOKKOS_RESTRICT gw = &grad_w(e, prow, 0);
        const Real* KOKKOS_RESTRICT wr = &w(e, prow, 0);
        for (int mp = -l; mp <= l; ++mp) {  // rg, accumulated in grad_w's row
          const Real d = band(e, boff + mp + l);
          const Real* KOKKOS_RESTRICT G = &grad_agg(i, l * l + l + mp, 0);
          if (mp == -l)
            Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) { gw[c] = d * G[c]; });
          else
            Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) { gw[c] += d * G[c]; });
        }
        team.team_barrier();  // the dot product reads entries other lanes wrote
        genv += team_dot(team, C, [&](int c) { return double(wr[c]) * double(gw[c]); });
        team.team_barrier();  // every lane has read grad_w before it is scaled
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) { gw[c] *= se; });
        for (int mp = -l; mp <= l; ++mp) {
          const Real* KOKKOS_RESTRICT G = &grad_agg(i, l * l + l + mp, 0);
          const double acc = team_dot(team, C, [&](int c) { return double(wr[c]) * double(G[c]); });
          Kokkos::single(Kokkos::PerTeam(team), [&]() { grad_band(e, boff + mp + l) = static_cast<Real>(double(se) * acc); });
        }
      }
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { grad_env(e) = static_cast<Real>(scale * genv); });
  }

  // The same backward in the lanes order (kernel_common.hpp LoopOrder): edge e = league rank x
  // edges_per_team + thread; rg stays in a register per channel instead of a round trip
  // through grad_w, and the channel sums are vector reductions. Same products and, per
  // channel, the same order as above; the channel sums differ from team_dot's by rounding.
  KOKKOS_INLINE_FUNCTION void operator()(TagBackwardLanes, const Team& team) const {
    Kokkos::parallel_for(Kokkos::TeamThreadRange(team, edges_per_team), [&](int t) {
      const int e = team.league_rank() * edges_per_team + t;
      if (e >= n_edges) return;
      const int i = recv(e), C = channels;
      const Real se = static_cast<Real>(scale) * env(e);
      double genv = 0.0;
      for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
        const int k = band_k(l, mmax);
        for (int m = -k; m <= k; ++m) {
          const int prow = packed_row(l, m, lmax), boff = off + (m + k) * (2 * l + 1);
          double part = 0.0;
          Kokkos::parallel_reduce(Kokkos::ThreadVectorRange(team, C), [&](int c, double& acc) {
            Real rg = band(e, boff) * grad_agg(i, l * l, c);    // mp = -l
            for (int mp = -l + 1; mp <= l; ++mp) rg += band(e, boff + mp + l) * grad_agg(i, l * l + l + mp, c);
            acc += double(w(e, prow, c)) * double(rg);
            grad_w(e, prow, c) = rg * se;
          }, part);
          genv += part;
          for (int mp = -l; mp <= l; ++mp) {
            double dot = 0.0;
            Kokkos::parallel_reduce(Kokkos::ThreadVectorRange(team, C), [&](int c, double& acc) {
              acc += double(w(e, prow, c)) * double(grad_agg(i, l * l + l + mp, c));
            }, dot);
            Kokkos::single(Kokkos::PerThread(team), [&]() { grad_band(e, boff + mp + l) = static_cast<Real>(double(se) * dot); });
          }
        }
      }
      Kokkos::single(Kokkos::PerThread(team), [&]() { grad_env(e) = static_cast<Real>(scale * genv); });
    });
  }

  // The backward in the warp order (CUDA only; lanes' mapping, one edge per warp, channel c on
  // lane c % 32): per (l, m) row each lane reads G's 2l+1 rows once for rg and for its partial
  // sums of grad_band's row, kept in registers and finished by one warp reduce-scatter
  // (warp_reduce.hpp); grad_env's per-lane partial sum is reduced once per edge.
  KOKKOS_INLINE_FUNCTION void operator()(TagBackwardWarp, const Team& team) const {
#if defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)
    const int e = team.league_rank() * edges_per_team + team.team_rank();
    if (e >= n_edges) return;  // the whole warp: every lane of it has this e
    const int lane = threadIdx.x;  // Kokkos' CUDA teams put the vector lanes on x
    const int i = recv(e), C = channels;
    const Real se = static_cast<Real>(scale) * env(e);
    double genv = 0.0;
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      with_pow2_slots(2 * l + 1, [&](auto slots) {
        constexpr int NV = decltype(slots)::value;
        const bool whole_row = 2 * l + 1 <= NV;  // one chunk; else rg needs all 2l+1 rows first
        for (int m = -k; m <= k; ++m) {
          const int prow = packed_row(l, m, lmax), boff = off + (m + k) * (2 * l + 1);
          if (!whole_row)
            for (int c = lane; c < C; c += kWarpLanes) {
              Real rg = band(e, boff) * grad_agg(i, l * l, c);
              for (int t = 1; t <= 2 * l; ++t) rg += band(e, boff + t) * grad_agg(i, l * l + t, c);
              genv += double(w(e, prow, c)) * double(rg);
              grad_w(e, prow, c) = rg * se;
            }
          for (int t0 = 0; t0 <= 2 * l; t0 += NV) {  // one chunk unless 2l+1 > kMaxSlots
            double part[NV];
EDGEFRAME_UNROLL
            for (int t = 0; t < NV; ++t) part[t] = 0.0;
            for (int c = lane; c < C; c += kWarpLanes) {
              const Real wc = w(e, prow, c);
              Real rg = Real(0);
              const int q = l * l + t0;
EDGEFRAME_UNROLL
              for (int t = 0; t < NV; ++t)
                if (t0 + t <= 2 * l) {
                  const Real G = grad_agg(i, q + t, c);
                  if (whole_row) rg = t == 0 ? band(e, boff) * G : rg + band(e, boff + t) * G;
                  part[t] += double(wc) * double(G);
                }
              if (whole_row) {  // rg is complete: this chunk is the whole row
                genv += double(wc) * double(rg);
                grad_w(e, prow, c) = rg * se;
              }
            }
            const double sum = warp_reduce_scatter<NV>(part, lane);
            const int t = t0 + reduce_scatter_index<NV>(lane);
            if (reduce_scatter_writer<NV>(lane) && t <= 2 * l)
              grad_band(e, boff + t) = static_cast<Real>(double(se) * sum);
          }
        }
      });
    }
    double env_sum[1] = {genv};
    genv = warp_reduce_scatter<1>(env_sum, lane);
    if (lane == 0) grad_env(e) = static_cast<Real>(scale * genv);
#else
    (void)team;
#endif
  }
};

template <class Exec, class Real>
void unrotate_aggregate_forward(const Exec& exec, const UnrotateAggregate<Exec, Real>& f, int n_nodes,
                                LoopOrder order = default_loop_order<Exec>()) {
  if (order == LoopOrder::rows) {
    Kokkos::parallel_for("edgeframe::unrotate_aggregate", team_policy<Exec, TagForward>(exec, n_nodes), f);
    return;
  }
  if (degree_order(order)) {
    launch_node_degree<TagNodeDegree>("edgeframe::unrotate_aggregate", exec, f, n_nodes, order);
    return;
  }
  launch_node_lanes<TagForwardLanes>("edgeframe::unrotate_aggregate", exec, f, n_nodes, order);
}

template <class Exec, class Real>
void unrotate_aggregate_backward(const Exec& exec, const UnrotateAggregate<Exec, Real>& f, int n_edges,
                                 LoopOrder order = default_loop_order<Exec>()) {
  if (order == LoopOrder::rows) {
    Kokkos::parallel_for("edgeframe::unrotate_aggregate_backward", team_policy<Exec, TagBackward>(exec, n_edges), f);
    return;
  }
  launch_edge_lanes<TagBackwardLanes, TagBackwardWarp>("edgeframe::unrotate_aggregate_backward", exec, f, n_edges, order);
}

}  // namespace edgeframe::kk
