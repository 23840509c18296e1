// unrotate_aggregate: rotate each edge's message back with the same band, apply the envelope
// and sum into the receiver (doc/model.md 3g):
//   agg[i, (l, m'), c] = scale * sum_{e into i} u(r_e) sum_{|m| <= min(l, mmax)} D^l_{m m'}(R_e) w[e, packed_row(l, m), c]
// with scale = 1 / avg_neighbors. The sum over edges is a segmented sum over the receiver CSR
// (graph.hpp), in edge order: no atomics, deterministic. Backward per edge: grad_w, grad_band,
// grad_env, each element with a single writer. Two passes, one functor each (UnrotateForward,
// UnrotateBackward), each in a host and a device form (kernel_common.hpp KernelForm).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

#include "band_layout.hpp"
#include "bf16.hpp"
#include "kernel_common.hpp"
#include "warp_reduce.hpp"

namespace edgeframe::kk {

// The views and shapes of both passes, filled by the caller; each launcher below hands its pass
// the part it reads.
template <class Exec, class Real>
struct UnrotateAggregate {
  View3<const Real, Exec> w;            // [E, K, C] packed messages
  View2<const Real, Exec> band;         // [E, band_size]
  View1<const Real, Exec> env;          // [E] envelope u(r_e)
  View1<const int, Exec> recv;          // [E]
  View1<const int, Exec> recv_offsets;  // [N+1]
  View3<Real, Exec> agg;                // [N, D, C] forward output (overwritten)
  View3<const Real, Exec> grad_agg;     // [N, D, C] backward input
  View3<Real, Exec> grad_w;             // [E, K, C] backward output (overwritten)
  View2<Real, Exec> grad_band;          // [E, band_size] backward output (overwritten)
  View1<Real, Exec> grad_env;           // [E] backward output (overwritten)
  double scale;                         // 1 / avg_neighbors
  int lmax, mmax, channels;
  int forward_parts = 0;  // device form's forward: parts of a node's edge list (1, 2, 4); 0 by edge_list_parts
};

template <class Exec, class Real>
struct UnrotateForward {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  View3<const Real, Exec> w;
  View2<const Real, Exec> band;
  View1<const Real, Exec> env;
  View1<const int, Exec> recv_offsets;
  View3<Real, Exec> agg;
  double scale;
  int lmax, mmax, channels;
  int parts = 1;  // device form: 1, or 2 / 4 adjacent lanes per element (edge_list_parts)

  // One team per node a: walk its incoming edges in CSR order, accumulating into its own rows.
  KOKKOS_INLINE_FUNCTION void operator()(TagHostForm, const Team& team) const {
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

  // One thread per (node a, degree l, block of V channels c0..c0+V-1) keeps all 2l+1 output
  // rows (l, m') in registers (chunks of kMaxSlots for l >= 4) and reads each message element
  // w[e, (l, m), c] once per chunk; each band entry serves V channels. In a warp the lanes share
  // a and l (when C / V is a multiple of 32): band, env and the CSR are broadcast loads.
  //   parts 1: per element the host form's products in its order (edges in CSR order, then m),
  //            summed in Real.
  //   parts P = 2, 4 (small systems, edge_list_parts): P adjacent lanes (index i = element P + s)
  //            sum P contiguous parts of the node's edge list in double and add the parts over
  //            the lanes, ((p0 + p1) + (p2 + p3)), which every lane gets bit for bit (addition
  //            commutes); one rounding to Real. Edges that add exact zeros (beyond r_cut in a
  //            graph kept with a skin) move the parts' boundaries, so the double sums regroup,
  //            but the element changes only where that regrouping crosses a rounding boundary of
  //            Real (Evaluator.EdgesBeyondTheCutoffAddNothing): a float sum split this way
  //            failed that test (doc/performance.md "Kernel forms").
  template <int V, int MaxL>
  KOKKOS_INLINE_FUNCTION void operator()(TagDeviceChannels<V, MaxL>, std::int64_t i) const {
    if (parts == 1) {
      element<V, MaxL, Real, false>(degree_element(i, lmax, channels / V), 0, 1);
      return;
    }
    const DegreeElement el = degree_element(i / parts, lmax, channels / V);
    const int s = int(i % parts);
    KOKKOS_IF_ON_DEVICE((element<V, MaxL, double, false>(el, s, parts);))
    // Host backends (the tests) have no lanes to add over: the first lane sums every part.
    KOKKOS_IF_ON_HOST((if (s == 0) element<V, MaxL, double, true>(el, 0, parts);))
  }

  // Sums part s of P of node el.a's edges for element el, adds the parts over the P lanes and
  // stores the sum from lane s = 0. AllParts (host backends): this lane sums every part and adds
  // them in the lanes' order.
  template <int V, int MaxL, class Acc, bool AllParts>
  KOKKOS_INLINE_FUNCTION void element(const DegreeElement& el, int s, int P) const {
    const int a = el.a, l = el.l, c0 = el.cb * V, k = band_k(l, mmax), off = band_offset(l, mmax), nrow = 2 * l + 1;
    if (l > MaxL) return;  // never taken (the launcher); tells the compiler which paths exist
    const int e_begin = recv_offsets(a), n = recv_offsets(a + 1) - e_begin;
    with_row_slots<(MaxL <= 3)>(nrow, [&](auto slots) {
      constexpr int NV = decltype(slots)::value;
      for (int t0 = 0; t0 < nrow; t0 += NV) {
        Acc acc[NV][V];
        auto sum_part = [&](int part, Acc(&out)[NV][V]) {
          EDGEFRAME_UNROLL
          for (int t = 0; t < NV; ++t)
            for (int v = 0; v < V; ++v) out[t][v] = Acc(0);
          const int e0 = e_begin + int(std::int64_t(n) * part / P),
                    e1 = e_begin + int(std::int64_t(n) * (part + 1) / P);
          for (int e = e0; e < e1; ++e) {
            const Real se = static_cast<Real>(scale) * env(e);
            for (int m = -k; m <= k; ++m) {
              Real wv[V];
              for (int v = 0; v < V; ++v) wv[v] = w(e, packed_row(l, m, lmax), c0 + v);
              const int b = off + (m + k) * nrow + t0;
              EDGEFRAME_UNROLL
              for (int t = 0; t < NV; ++t)
                if (t0 + t < nrow) {
                  const Real d = se * band(e, b + t);
                  for (int v = 0; v < V; ++v) out[t][v] += Acc(d) * Acc(wv[v]);
                }
            }
          }
        };
        sum_over_parts<AllParts>(acc, s, P, sum_part);
        if (s > 0) continue;
        EDGEFRAME_UNROLL
        for (int t = 0; t < NV; ++t)
          if (t0 + t < nrow)
            for (int v = 0; v < V; ++v) agg(a, l * l + t0 + t, c0 + v) = static_cast<Real>(acc[t][v]);
      }
    });
  }
};

// Per edge e: with G = grad_agg[recv(e)] and rg[row, c] = sum_{m'} D_{m m'} G[(l, m'), c],
//   grad_w = scale u rg,  grad_env = scale sum_{row, c} w rg,  grad_band[(l, m, m')] = scale u sum_c w G.
// grad_w's elements are Out: Real, or Bf16 (bf16.hpp; the device form only: the host form sums
// in grad_w's rows).
template <class Exec, class Real, class Out = Real>
struct UnrotateBackward {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Lanes = EdgeLanes<Exec>;
  View3<const Real, Exec> w, grad_agg;
  View2<const Real, Exec> band;
  View1<const Real, Exec> env;
  View1<const int, Exec> recv;
  View3<Out, Exec> grad_w;
  View2<Real, Exec> grad_band;
  View1<Real, Exec> grad_env;
  double scale;
  int lmax, mmax, channels;
  int n_edges;

  // One team per edge, channels over its vector lanes, the channel sums by team_dot.
  KOKKOS_INLINE_FUNCTION void operator()(TagHostForm, const Team& team) const {
    if constexpr (!std::is_same_v<Out, Real>) {
      Kokkos::abort("edgeframe: the host form of unrotate_aggregate_backward writes Real grad_w only");
    } else {
      host_form(team);
    }
  }
  KOKKOS_INLINE_FUNCTION void host_form(const Team& team) const {
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
          Kokkos::single(Kokkos::PerTeam(team),
                         [&]() { grad_band(e, boff + mp + l) = static_cast<Real>(double(se) * acc); });
        }
      }
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { grad_env(e) = static_cast<Real>(scale * genv); });
  }

  // One edge per group of lanes (EdgeLanes: a warp on CUDA), channel c on lane c % lanes: per
  // (l, m) row each lane reads G's 2l+1 rows once for rg and for its partial sums of
  // grad_band's row, kept in registers and finished by one reduce-scatter; grad_env's per-lane
  // partial sum is reduced once per edge. The channel sums go in another order than the host
  // form's: equal to rounding. Degrees up to MaxL (TagDeviceUpTo; the launcher makes sure that
  // lmax <= MaxL): short_degree for MaxL <= kShortDegrees, any_degrees above.
  template <int MaxL>
  KOKKOS_INLINE_FUNCTION void operator()(TagDeviceUpTo<MaxL>, const Team& team) const {
    const int e = team.league_rank() * Lanes::edges_per_team + team.team_rank();
    if (e >= n_edges) return;  // the whole group: every lane of it has this e
    const Lanes lanes = Lanes::here();
    const int i = recv(e), C = channels;
    const Real se = static_cast<Real>(scale) * env(e);
    double genv = 0.0;
    if constexpr (MaxL <= kShortDegrees)
      short_degree<0, MaxL>(e, i, se, genv, lanes);
    else
      any_degrees<MaxL>(e, i, C, se, genv, lanes);
    double env_sum[1] = {genv};
    lanes.reduce_scatter(env_sum, [&](int, double sum) { grad_env(e) = static_cast<Real>(scale * sum); });
  }

  // Degrees up to MaxL <= kShortDegrees, degree L at compile time: per chunk of kLaneChannels
  // channels per lane (one chunk for C <= 128 on a warp), every load of the chunk (its 2L+1
  // rows of G and the degree's 2k+1 rows of w) before its first store, then per row (L, m)
  // the products of the form below in its order. In that form each row's loads followed the
  // previous row's stores of grad_w, and the compiler must keep that order (grad_w may alias w
  // as far as it knows): a lane waited for one load after another, which ncu counted as 61 %
  // of the stall cycles (doc/performance.md "Kernel forms"). With more than one chunk grad_band
  // adds each chunk's sum (equal to rounding).
  template <int L, int MaxL>
  KOKKOS_INLINE_FUNCTION void short_degree(int e, int i, Real se, double& genv, const Lanes& lanes) const {
    if constexpr (L <= MaxL) {
      if (L > lmax) return;
      constexpr int NR = 2 * L + 1, NV = NR == 1 ? 1 : NR <= 4 ? 4 : kMaxSlots, Q = kLaneChannels;
      const int C = channels, k = band_k(L, mmax), off = band_offset(L, mmax);
      // The same number of chunks on every lane: the reduce-scatters need the whole group.
      for (int base = 0, chunk = 0; base < C; base += Q * Lanes::count, ++chunk) {
        const int c0 = base + lanes.index;
        Real Gv[NR][Q], Wv[NR][Q];
        EDGEFRAME_UNROLL
        for (int q = 0; q < Q; ++q) {
          const int c = c0 + q * Lanes::count;
          EDGEFRAME_UNROLL
          for (int t = 0; t < NR; ++t) Gv[t][q] = c < C ? grad_agg(i, L * L + t, c) : Real(0);
          EDGEFRAME_UNROLL
          for (int m = -L; m <= L; ++m)
            if (m >= -k && m <= k) Wv[m + L][q] = c < C ? w(e, packed_row(L, m, lmax), c) : Real(0);
        }
        EDGEFRAME_UNROLL
        for (int m = -L; m <= L; ++m) {
          if (m < -k || m > k) continue;
          const int prow = packed_row(L, m, lmax), boff = off + (m + k) * NR;
          Real d[NR];
          EDGEFRAME_UNROLL
          for (int t = 0; t < NR; ++t) d[t] = band(e, boff + t);
          double part[NV];
          EDGEFRAME_UNROLL
          for (int t = 0; t < NV; ++t) part[t] = 0.0;
          EDGEFRAME_UNROLL
          for (int q = 0; q < Q; ++q) {
            const int c = c0 + q * Lanes::count;
            const Real wc = Wv[m + L][q];
            Real rg = d[0] * Gv[0][q];
            part[0] += double(wc) * double(Gv[0][q]);
            EDGEFRAME_UNROLL
            for (int t = 1; t < NR; ++t) {
              rg += d[t] * Gv[t][q];
              part[t] += double(wc) * double(Gv[t][q]);
            }
            if (c < C) {
              genv += double(wc) * double(rg);
              grad_w(e, prow, c) = store_as<Out>(rg * se);
            }
          }
          lanes.reduce_scatter(part, [&](int t, double sum) {
            if (t >= NR) return;
            const Real v = static_cast<Real>(double(se) * sum);
            if (chunk == 0)
              grad_band(e, boff + t) = v;
            else
              grad_band(e, boff + t) += v;
          });
        }
      }
      short_degree<L + 1, MaxL>(e, i, se, genv, lanes);
    }
  }

  // Any degree up to MaxL: per row (l, m) and lane channel, 2l+1 sums in chunks of kMaxSlots.
  template <int MaxL>
  KOKKOS_INLINE_FUNCTION void any_degrees(int e, int i, int C, Real se, double& genv, const Lanes& lanes) const {
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      if (l > MaxL) continue;  // never taken (the launcher); tells the compiler which paths exist
      const int k = band_k(l, mmax);
      with_pow2_slots(2 * l + 1, [&](auto slots) {
        constexpr int NV = decltype(slots)::value;
        const bool whole_row = 2 * l + 1 <= NV;  // one chunk; else rg needs all 2l+1 rows first
        for (int m = -k; m <= k; ++m) {
          const int prow = packed_row(l, m, lmax), boff = off + (m + k) * (2 * l + 1);
          if (!whole_row)
            for (int c = lanes.index; c < C; c += Lanes::count) {
              Real rg = band(e, boff) * grad_agg(i, l * l, c);
              for (int t = 1; t <= 2 * l; ++t) rg += band(e, boff + t) * grad_agg(i, l * l + t, c);
              genv += double(w(e, prow, c)) * double(rg);
              grad_w(e, prow, c) = store_as<Out>(rg * se);
            }
          for (int t0 = 0; t0 <= 2 * l; t0 += NV) {  // one chunk unless 2l+1 > kMaxSlots
            double part[NV];
            EDGEFRAME_UNROLL
            for (int t = 0; t < NV; ++t) part[t] = 0.0;
            for (int c = lanes.index; c < C; c += Lanes::count) {
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
                grad_w(e, prow, c) = store_as<Out>(rg * se);
              }
            }
            lanes.reduce_scatter(part, [&](int t, double sum) {
              if (t0 + t <= 2 * l) grad_band(e, boff + t0 + t) = static_cast<Real>(double(se) * sum);
            });
          }
        }
      });
    }
  }
};

template <class Exec, class Real>
void unrotate_aggregate_forward(const Exec& exec, const UnrotateAggregate<Exec, Real>& p, int n_nodes,
                                KernelForm form = native_form<Exec>()) {
  UnrotateForward<Exec, Real> f{p.w, p.band, p.env, p.recv_offsets, p.agg, p.scale, p.lmax, p.mmax, p.channels};
  if (form == KernelForm::device) {
    f.parts = p.forward_parts > 0 ? p.forward_parts : edge_list_parts(exec, n_nodes, p.lmax, p.channels);
    if (f.parts != 1 && f.parts != 2 && f.parts != 4)
      throw std::invalid_argument("edgeframe: unrotate_aggregate's forward_parts must be 1, 2 or 4");
    launch_device_node_pass("edgeframe::unrotate_aggregate", exec, f, n_nodes, f.parts);
  } else
    Kokkos::parallel_for("edgeframe::unrotate_aggregate", team_policy<Exec, TagHostForm>(exec, n_nodes), f);
}

// The backward with grad_w into grad_w_out (Real or Bf16 elements; p.grad_w is not used). Bf16
// needs the device form (it runs on every backend).
template <class Exec, class Real, class Out>
void unrotate_aggregate_backward_into(const Exec& exec, const UnrotateAggregate<Exec, Real>& p,
                                      const View3<Out, Exec>& grad_w_out, int n_edges,
                                      KernelForm form = native_form<Exec>()) {
  if (!std::is_same_v<Out, Real> && form == KernelForm::host)
    throw std::invalid_argument("edgeframe: unrotate_aggregate_backward's host form writes Real grad_w only");
  const UnrotateBackward<Exec, Real, Out> f{p.w,        p.grad_agg, p.band, p.env,  p.recv,     grad_w_out, p.grad_band,
                                            p.grad_env, p.scale,    p.lmax, p.mmax, p.channels, n_edges};
  launch_edge_pass("edgeframe::unrotate_aggregate_backward", exec, f, n_edges, form);
}

template <class Exec, class Real>
void unrotate_aggregate_backward(const Exec& exec, const UnrotateAggregate<Exec, Real>& p, int n_edges,
                                 KernelForm form = native_form<Exec>()) {
  unrotate_aggregate_backward_into(exec, p, p.grad_w, n_edges, form);
}

}  // namespace edgeframe::kk
