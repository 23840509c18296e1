// edge_frame_pack: gather the sender's and the receiver's normalised features, rotate them into
// the edge frame with the band, pack by m and apply the radial multipliers (doc/model.md 3b-c):
//   u[e, packed_row(l, m), c] = g[e, gate_row(l, m), c] * sum_{m'} D^l_{m m'}(R_e) x_e[(l, m'), c]
//   x_e[:, c] = n[send(e), :, c] for c < C,  n[recv(e), :, c - C] for C <= c < 2C.
// Index helpers and layouts: band_layout.hpp. Three passes, one functor each: PackForward,
// PackBackwardEdge (grad_rot, grad_band, grad_g per edge) and PackBackwardNode (grad_n per
// node), each in a host and a device form (kernel_common.hpp KernelForm). Every output element
// has one writer; the node pass walks the sender grouping then the receiver CSR in edge order:
// no atomics, deterministic.
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

// The views and shapes of all three passes, filled by the caller (the engine's autograd
// function, the tests); each launcher below hands its pass the part it reads.
template <class Exec, class Real>
struct EdgeFramePack {
  View3<const Real, Exec> n;     // [N, D, C] normalised node features
  View2<const Real, Exec> band;  // [E, band_size]
  View3<const Real, Exec> g;     // [E, gate_rows, 2C] radial multipliers
  View1<const int, Exec> recv, send;
  View1<const int, Exec> recv_offsets, send_offsets, send_edges;  // graph.hpp
  View3<Real, Exec> u;                                            // [E, K, 2C] forward output
  View3<const Real, Exec> grad_u;                                 // [E, K, 2C] backward input
  View3<Real, Exec> grad_rot;   // [E, K, 2C] g * grad_u: backward-edge output, backward-node input
                                // (may be grad_u's memory: backward_edge_in_place)
  View3<Real, Exec> grad_n;     // [N, D, C] backward output (overwritten)
  View2<Real, Exec> grad_band;  // [E, band_size] backward output (overwritten)
  View3<Real, Exec> grad_g;     // [E, gate_rows, 2C] backward output (overwritten; may be g's memory)
  int lmax, mmax, channels;
  int node_split = 0;  // the device form's node pass: 1 or 2 threads per element, 0 by node_pass_split
};

// Loop order of every pass: band entries outer, channels inner and contiguous, so channel loops
// vectorise on CPUs and coalesce on GPUs. Short sums (2l+1 terms) accumulate in Real; channel
// reductions (2C terms) in double.
// u's elements are Out: Real, or Bf16 (bf16.hpp: each value computed in Real, rounded at the store).
template <class Exec, class Real, class Out = Real>
struct PackForward {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  View3<const Real, Exec> n, g;
  View2<const Real, Exec> band;
  View1<const int, Exec> recv, send;
  View3<Out, Exec> u;
  int lmax, mmax, channels;

  // One team per edge; the sum over m' accumulates in registers and each output element is
  // written once.
  KOKKOS_INLINE_FUNCTION void operator()(TagHostForm, const Team& team) const {
    const int e = team.league_rank();
    const int i = recv(e), j = send(e), C = channels;
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      for (int m = -k; m <= k; ++m) {
        const int boff = off + (m + k) * (2 * l + 1);
        Out* KOKKOS_RESTRICT ur = &u(e, packed_row(l, m, lmax), 0);  // [2C], this team's row
        const Real* KOKKOS_RESTRICT gr = &g(e, gate_row(l, m, lmax), 0);
        const Real* KOKKOS_RESTRICT dr = &band(e, boff);   // D_{m, -l..l}
        const Real* KOKKOS_RESTRICT xj = &n(j, l * l, 0);  // rows (l, -l..l)
        const Real* KOKKOS_RESTRICT xi = &n(i, l * l, 0);
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) {
          Real sj = dr[0] * xj[c], si = dr[0] * xi[c];
          for (int t = 1; t <= 2 * l; ++t) {
            sj += dr[t] * xj[t * C + c];
            si += dr[t] * xi[t * C + c];
          }
          ur[c] = store_as<Out>(sj * gr[c]);
          ur[C + c] = store_as<Out>(si * gr[C + c]);
        });
      }
    }
  }

  // One team per edge; each lane loads its channel's 2l+1 x rows of both ends once per degree
  // into registers (2l+1 <= kMaxSlots) and computes all 2k+1 output rows from them, where the
  // host form re-reads them for every output row. Same products in the same order per element.
  KOKKOS_INLINE_FUNCTION void operator()(TagDeviceForm, const Team& team) const {
    const int e = team.league_rank();
    const int i = recv(e), j = send(e), C = channels;
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax), nrow = 2 * l + 1;
      const Real* KOKKOS_RESTRICT xj = &n(j, l * l, 0);  // rows (l, -l..l)
      const Real* KOKKOS_RESTRICT xi = &n(i, l * l, 0);
      Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) {
        with_pow2_slots(nrow, [&](auto slots) {
          constexpr int NV = decltype(slots)::value;
          if (nrow <= NV) {
            Real rj[NV], ri[NV];
            EDGEFRAME_UNROLL
            for (int t = 0; t < NV; ++t) {
              rj[t] = t < nrow ? xj[t * C + c] : Real(0);
              ri[t] = t < nrow ? xi[t * C + c] : Real(0);
            }
            for (int m = -k; m <= k; ++m) {
              const Real* KOKKOS_RESTRICT dr = &band(e, off + (m + k) * nrow);
              Real sj = dr[0] * rj[0], si = dr[0] * ri[0];
              EDGEFRAME_UNROLL
              for (int t = 1; t < NV; ++t)
                if (t < nrow) {
                  sj += dr[t] * rj[t];
                  si += dr[t] * ri[t];
                }
              const int grow = gate_row(l, m, lmax), prow = packed_row(l, m, lmax);
              u(e, prow, c) = store_as<Out>(sj * g(e, grow, c));
              u(e, prow, C + c) = store_as<Out>(si * g(e, grow, C + c));
            }
          } else {  // l >= 4: the rows order's loads
            for (int m = -k; m <= k; ++m) {
              const Real* KOKKOS_RESTRICT dr = &band(e, off + (m + k) * nrow);
              Real sj = dr[0] * xj[c], si = dr[0] * xi[c];
              for (int t = 1; t < nrow; ++t) {
                sj += dr[t] * xj[t * C + c];
                si += dr[t] * xi[t * C + c];
              }
              const int grow = gate_row(l, m, lmax), prow = packed_row(l, m, lmax);
              u(e, prow, c) = store_as<Out>(sj * g(e, grow, c));
              u(e, prow, C + c) = store_as<Out>(si * g(e, grow, C + c));
            }
          }
        });
      });
    }
  }

  // Degrees up to MaxL <= kShortDegrees (the launcher takes it for lmax <= kShortDegrees: UMA-S,
  // eSEN-sm, the L2 shape): the device form's products, with every load of a lane (its
  // channel's x rows of both ends, its radial multipliers, the band) before its first store. In
  // the form above each output row's g load follows the previous row's store of u, and the
  // compiler must keep that order (u may alias g as far as it knows), so a lane waited for one
  // load after another: ncu put 70 % of the pack's stall cycles on global-load waits
  // (doc/performance.md "Kernel forms"). Register slots have compile-time indices: x row
  // l*l + l + m', output row l*l + l + m, g row (l, |m|) at l (l + 1) / 2 + |m|; the rows'
  // positions in u and g are computed.
  template <int MaxL>
  KOKKOS_INLINE_FUNCTION void operator()(TagDeviceUpTo<MaxL>, const Team& team) const {
    static_assert(MaxL <= kShortDegrees, "the launcher takes this form for short degrees only");
    constexpr int D = (MaxL + 1) * (MaxL + 1), G = (MaxL + 1) * (MaxL + 2) / 2;
    const int e = team.league_rank();
    const int i = recv(e), j = send(e), C = channels;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) {
      Real xj[D], xi[D], gj[G], gi[G], uj[D], ui[D];
      EDGEFRAME_UNROLL
      for (int l = 0; l <= MaxL; ++l) {
        if (l > lmax) continue;
        EDGEFRAME_UNROLL
        for (int t = 0; t < 2 * l + 1; ++t) {
          xj[l * l + t] = n(j, l * l + t, c);
          xi[l * l + t] = n(i, l * l + t, c);
        }
        EDGEFRAME_UNROLL
        for (int am = 0; am <= l; ++am)
          if (am <= band_k(l, mmax)) {
            gj[l * (l + 1) / 2 + am] = g(e, gate_row(l, am, lmax), c);
            gi[l * (l + 1) / 2 + am] = g(e, gate_row(l, am, lmax), C + c);
          }
      }
      EDGEFRAME_UNROLL
      for (int l = 0; l <= MaxL; ++l) {
        if (l > lmax) continue;
        const int k = band_k(l, mmax), off = band_offset(l, mmax), nrow = 2 * l + 1;
        EDGEFRAME_UNROLL
        for (int m = -l; m <= l; ++m) {
          if (m < -k || m > k) continue;
          const Real* KOKKOS_RESTRICT dr = &band(e, off + (m + k) * nrow);
          Real sj = dr[0] * xj[l * l], si = dr[0] * xi[l * l];
          EDGEFRAME_UNROLL
          for (int t = 1; t < 2 * l + 1; ++t) {
            sj += dr[t] * xj[l * l + t];
            si += dr[t] * xi[l * l + t];
          }
          const int gs = l * (l + 1) / 2 + (m < 0 ? -m : m);
          uj[l * l + l + m] = sj * gj[gs];
          ui[l * l + l + m] = si * gi[gs];
        }
      }
      EDGEFRAME_UNROLL
      for (int l = 0; l <= MaxL; ++l) {
        if (l > lmax) continue;
        const int k = band_k(l, mmax);
        EDGEFRAME_UNROLL
        for (int m = -l; m <= l; ++m) {
          if (m < -k || m > k) continue;
          const int prow = packed_row(l, m, lmax);
          u(e, prow, c) = store_as<Out>(uj[l * l + l + m]);
          u(e, prow, C + c) = store_as<Out>(ui[l * l + l + m]);
        }
      }
    });
  }
};

// Per edge: grad_rot = g * grad_u, grad_band, grad_g.
//   grad_band[(l, m, m')] = sum_c grad_rot[(l, m), c] x[(l, m'), c]
//   grad_g[(l, |m|), c]   = sum_{m'} x[(l, m'), c] sum_{+-m} D_{+-m, m'} grad_u[(l, +-m), c]
// grad_g's elements are GradG: Real, or Bf16 (bf16.hpp; the device form only: the host form
// sums in grad_g's rows).
template <class Exec, class Real, class GradG = Real>
struct PackBackwardEdge {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Lanes = EdgeLanes<Exec>;
  View3<const Real, Exec> n, g, grad_u;
  View2<const Real, Exec> band;
  View1<const int, Exec> recv, send;
  View3<Real, Exec> grad_rot;
  View3<GradG, Exec> grad_g;
  View2<Real, Exec> grad_band;
  int lmax, mmax, channels;
  int n_edges;

  // One team per edge, channels over its vector lanes, the band-entry sums by team_dot.
  KOKKOS_INLINE_FUNCTION void operator()(TagHostForm, const Team& team) const {
    if constexpr (!std::is_same_v<GradG, Real>) {
      Kokkos::abort("edgeframe: the host form of edge_frame_pack_backward_edge writes Real grad_g only");
    } else {
      host_form(team);
    }
  }
  KOKKOS_INLINE_FUNCTION void host_form(const Team& team) const {
    const int e = team.league_rank();
    const int i = recv(e), j = send(e), C = channels;
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      for (int m = -k; m <= k; ++m) {
        const int boff = off + (m + k) * (2 * l + 1);
        const int prow = packed_row(l, m, lmax);
        Real* KOKKOS_RESTRICT rr = &grad_rot(e, prow, 0);
        const Real* KOKKOS_RESTRICT gur = &grad_u(e, prow, 0);
        const Real* KOKKOS_RESTRICT gr = &g(e, gate_row(l, m, lmax), 0);
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, 2 * C), [&](int c) { rr[c] = gr[c] * gur[c]; });
        team.team_barrier();  // the dot products below read entries other lanes wrote
        for (int mp = -l; mp <= l; ++mp) {
          const Real* KOKKOS_RESTRICT xj = &n(j, l * l + l + mp, 0);
          const Real* KOKKOS_RESTRICT xi = &n(i, l * l + l + mp, 0);
          const double acc = team_dot(
              team, C, [&](int c) { return double(rr[c]) * double(xj[c]) + double(rr[C + c]) * double(xi[c]); });
          Kokkos::single(Kokkos::PerTeam(team), [&]() { grad_band(e, boff + mp + l) = static_cast<Real>(acc); });
        }
      }
      for (int am = 0; am <= k; ++am) {
        Real* KOKKOS_RESTRICT ggr = &grad_g(e, gate_row(l, am, lmax), 0);
        const Real* KOKKOS_RESTRICT gp = &grad_u(e, packed_row(l, am, lmax), 0);
        const Real* KOKKOS_RESTRICT gm = &grad_u(e, packed_row(l, -am, lmax), 0);  // = gp when am = 0
        for (int mp = -l; mp <= l; ++mp) {
          const Real* KOKKOS_RESTRICT xj = &n(j, l * l + l + mp, 0);
          const Real* KOKKOS_RESTRICT xi = &n(i, l * l + l + mp, 0);
          const Real dp = band(e, off + (am + k) * (2 * l + 1) + mp + l);
          const Real dm = am == 0 ? Real(0) : band(e, off + (-am + k) * (2 * l + 1) + mp + l);
          if (mp == -l)
            Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) {
              ggr[c] = (dp * gp[c] + dm * gm[c]) * xj[c];
              ggr[C + c] = (dp * gp[C + c] + dm * gm[C + c]) * xi[c];
            });
          else
            Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) {
              ggr[c] += (dp * gp[c] + dm * gm[c]) * xj[c];
              ggr[C + c] += (dp * gp[C + c] + dm * gm[C + c]) * xi[c];
            });
        }
      }
    }
  }

  // One edge per group of lanes (EdgeLanes: a warp on CUDA), channel c on lane c % lanes. For
  // degrees with 2l+1 <= kMaxSlots (l <= 3) each lane loads its channel's 2l+1 x rows of both
  // ends once per gate row (l, |m|) and uses them three times: grad_band's partial sums of the
  // rows (l, +-m), kept in registers and finished by one reduce-scatter; the rotated values D x
  // of those rows; and grad_g = sum_{+-m} grad_u (D x) (the forward's u = g (D x)). Degrees
  // l >= 4 take rows_of_degree's path. grad_band and grad_g sum in other orders than the host
  // form's: equal to rounding. Degrees up to MaxL (TagDeviceUpTo; the launcher makes sure that
  // lmax <= MaxL).
  template <int MaxL>
  KOKKOS_INLINE_FUNCTION void operator()(TagDeviceUpTo<MaxL>, const Team& team) const {
    const int e = team.league_rank() * Lanes::edges_per_team + team.team_rank();
    if (e >= n_edges) return;  // the whole group: every lane of it has this e
    const Lanes lanes = Lanes::here();
    const int i = recv(e), j = send(e);
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      if (l > MaxL) continue;  // never taken (the launcher); tells the compiler which paths exist
      if (2 * l + 1 > kMaxSlots) {
        rows_of_degree(e, i, j, l, off, lanes);
        grad_g_of_degree(e, i, j, l, band_k(l, mmax), off, lanes);
        continue;
      }
      with_pow2_slots(2 * l + 1,
                      [&](auto slots) { gate_rows_of_degree<decltype(slots)::value>(e, i, j, l, off, lanes); });
    }
  }

  // grad_rot and grad_band rows of degree l for edge e, 2l+1 sums per row in chunks of
  // kMaxSlots (all lanes together).
  KOKKOS_INLINE_FUNCTION void rows_of_degree(int e, int i, int j, int l, int off, const Lanes& lanes) const {
    const int k = band_k(l, mmax), C = channels;
    with_pow2_slots(2 * l + 1, [&](auto slots) {
      constexpr int NV = decltype(slots)::value;
      for (int m = -k; m <= k; ++m) {
        const int boff = off + (m + k) * (2 * l + 1);
        const int prow = packed_row(l, m, lmax), grow = gate_row(l, m, lmax);
        for (int t0 = 0; t0 <= 2 * l; t0 += NV) {  // one chunk unless 2l+1 > kMaxSlots
          double part[NV];
          EDGEFRAME_UNROLL
          for (int t = 0; t < NV; ++t) part[t] = 0.0;
          for (int c = lanes.index; c < C; c += Lanes::count) {
            const Real rj = g(e, grow, c) * grad_u(e, prow, c), ri = g(e, grow, C + c) * grad_u(e, prow, C + c);
            if (t0 == 0) {
              grad_rot(e, prow, c) = rj;
              grad_rot(e, prow, C + c) = ri;
            }
            const int q = l * l + t0;
            EDGEFRAME_UNROLL
            for (int t = 0; t < NV; ++t)
              if (t0 + t <= 2 * l) part[t] += double(rj) * double(n(j, q + t, c)) + double(ri) * double(n(i, q + t, c));
          }
          lanes.reduce_scatter(part, [&](int t, double sum) {
            if (t0 + t <= 2 * l) grad_band(e, boff + t0 + t) = static_cast<Real>(sum);
          });
        }
      }
    });
  }

  // The rows of degree l (2l+1 <= NV) for edge e: per gate row (l, |m|) the rows (l, +|m|)
  // and, for |m| > 0, (l, -|m|) from one load of the x rows per channel.
  template <int NV>
  KOKKOS_INLINE_FUNCTION void gate_rows_of_degree(int e, int i, int j, int l, int off, const Lanes& lanes) const {
    const int k = band_k(l, mmax), C = channels, nrow = 2 * l + 1;
    for (int am = 0; am <= k; ++am) {
      const int grow = gate_row(l, am, lmax);
      const int pp = packed_row(l, am, lmax), pm = packed_row(l, -am, lmax);
      const int bp = off + (am + k) * nrow, bm = off + (-am + k) * nrow;
      // grad_band's partial sums of this lane's channels (2 C / lanes terms, in Real: a short
      // sum on a warp), summed over the lanes in double. With these partial sums in double (as
      // rows_of_degree keeps them) the float kernel needed 96 registers instead of 66 (ptxas,
      // sm_90, lmax <= 2): 5 teams per multiprocessor instead of 7.
      Real part_p[NV], part_m[NV];
      EDGEFRAME_UNROLL
      for (int t = 0; t < NV; ++t) part_p[t] = part_m[t] = Real(0);
      for (int c = lanes.index; c < C; c += Lanes::count) {
        Real xj[NV], xi[NV];
        EDGEFRAME_UNROLL
        for (int t = 0; t < NV; ++t) {
          xj[t] = t < nrow ? n(j, l * l + t, c) : Real(0);
          xi[t] = t < nrow ? n(i, l * l + t, c) : Real(0);
        }
        const Real gj = g(e, grow, c), gi = g(e, grow, C + c);
        Real ggj = Real(0), ggi = Real(0);  // 0 + a b rounds as a b: the first row adds exactly
        // One row (l, m) of this gate row: grad_rot, grad_band's partial sums, and its term
        // grad_u (D x) of grad_g.
        auto row = [&](int prow, int brow, Real(&part)[NV]) {
          const Real guj = grad_u(e, prow, c), gui = grad_u(e, prow, C + c);
          const Real rj = gj * guj, ri = gi * gui;
          grad_rot(e, prow, c) = rj;
          grad_rot(e, prow, C + c) = ri;
          Real dxj = Real(0), dxi = Real(0);
          EDGEFRAME_UNROLL
          for (int t = 0; t < NV; ++t)
            if (t < nrow) {
              part[t] += rj * xj[t] + ri * xi[t];
              const Real d = band(e, brow + t);
              dxj += d * xj[t];
              dxi += d * xi[t];
            }
          ggj += guj * dxj;
          ggi += gui * dxi;
        };
        row(pp, bp, part_p);
        if (am > 0) row(pm, bm, part_m);  // row (l, -|m|): same gate row
        grad_g(e, grow, c) = store_as<GradG>(ggj);
        grad_g(e, grow, C + c) = store_as<GradG>(ggi);
      }
      double sums[NV];
      EDGEFRAME_UNROLL
      for (int t = 0; t < NV; ++t) sums[t] = part_p[t];
      lanes.reduce_scatter(sums, [&](int t, double sum) {
        if (t < nrow) grad_band(e, bp + t) = static_cast<Real>(sum);
      });
      if (am > 0) {
        EDGEFRAME_UNROLL
        for (int t = 0; t < NV; ++t) sums[t] = part_m[t];
        lanes.reduce_scatter(sums, [&](int t, double sum) {
          if (t < nrow) grad_band(e, bm + t) = static_cast<Real>(sum);
        });
      }
    }
  }

  // grad_g's rows of degree l for edge e, this lane's channels.
  KOKKOS_INLINE_FUNCTION void grad_g_of_degree(int e, int i, int j, int l, int k, int off, const Lanes& lanes) const {
    const int C = channels;
    for (int am = 0; am <= k; ++am) {
      const int grow = gate_row(l, am, lmax), pp = packed_row(l, am, lmax), pm = packed_row(l, -am, lmax);
      for (int c = lanes.index; c < C; c += Lanes::count) {
        Real sj = Real(0), si = Real(0);
        for (int mp = -l; mp <= l; ++mp) {
          const int q = l * l + l + mp;
          const Real dp = band(e, off + (am + k) * (2 * l + 1) + mp + l);
          const Real dm = am == 0 ? Real(0) : band(e, off + (-am + k) * (2 * l + 1) + mp + l);
          const Real tj = (dp * grad_u(e, pp, c) + dm * grad_u(e, pm, c)) * n(j, q, c);
          const Real ti = (dp * grad_u(e, pp, C + c) + dm * grad_u(e, pm, C + c)) * n(i, q, c);
          sj = mp == -l ? tj : sj + tj;
          si = mp == -l ? ti : si + ti;
        }
        grad_g(e, grow, c) = store_as<GradG>(sj);
        grad_g(e, grow, C + c) = store_as<GradG>(si);
      }
    }
  }
};

// Per node a: grad_n[a, (l, m'), c] = sum over edges where a sends (channels 0..C-1) and where a
// receives (channels C..2C-1) of sum_m D_{m m'} grad_rot[(l, m), c].
template <class Exec, class Real>
struct PackBackwardNode {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  View2<const Real, Exec> band;
  View3<const Real, Exec> grad_rot;
  View1<const int, Exec> recv_offsets, send_offsets, send_edges;
  View3<Real, Exec> grad_n;
  int lmax, mmax, channels;
  int split = 1;  // device form: 2 puts the sender and the receiver edges on two threads

  // One team per node, accumulating into its own output rows.
  KOKKOS_INLINE_FUNCTION void operator()(TagHostForm, const Team& team) const {
    const int a = team.league_rank(), C = channels, D = (lmax + 1) * (lmax + 1);
    Real* KOKKOS_RESTRICT out = &grad_n(a, 0, 0);  // [D, C], this team's rows
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, D * C), [&](int q) { out[q] = Real(0); });
    team.team_barrier();  // zeroed with another lane mapping than the accumulation below
    const int n_send = send_offsets(a + 1) - send_offsets(a);
    const int n_recv = recv_offsets(a + 1) - recv_offsets(a);
    for (int q = 0; q < n_send + n_recv; ++q) {
      const bool sender = q < n_send;
      const int e = sender ? send_edges(send_offsets(a) + q) : recv_offsets(a) + (q - n_send);
      const int half = sender ? 0 : C;
      for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
        const int k = band_k(l, mmax);
        for (int m = -k; m <= k; ++m) {
          const Real* KOKKOS_RESTRICT rr = &grad_rot(e, packed_row(l, m, lmax), half);
          const int boff = off + (m + k) * (2 * l + 1);
          for (int mp = -l; mp <= l; ++mp) {
            const Real d = band(e, boff + mp + l);
            Real* KOKKOS_RESTRICT o = out + (l * l + l + mp) * C;
            Kokkos::parallel_for(Kokkos::TeamVectorRange(team, C), [&](int c) { o[c] += d * rr[c]; });
          }
        }
      }
    }
  }

  // One thread per (node a, degree l, block of V channels c0..c0+V-1) keeps all 2l+1 output
  // rows (l, m') in registers (chunks of kMaxSlots for l >= 4) and reads each grad_rot element
  // once per chunk; each band entry serves V channels. Per element the host form's products in
  // its order (sender grouping, then receiver CSR; m); with split 2 the sender part and the
  // receiver part are summed on two threads and added.
  template <int V, int MaxL>
  KOKKOS_INLINE_FUNCTION void operator()(TagDeviceChannels<V, MaxL>, std::int64_t idx) const {
    const auto [a, l, cb, part] = degree_element(idx, lmax, channels / V, split);
    const int C = channels, c0 = cb * V, k = band_k(l, mmax), off = band_offset(l, mmax), nrow = 2 * l + 1;
    const int n_send = send_offsets(a + 1) - send_offsets(a);
    const int n_recv = recv_offsets(a + 1) - recv_offsets(a);
    const int q_begin = split == 2 && part == 1 ? n_send : 0;
    const int q_end = split == 2 && part == 0 ? n_send : n_send + n_recv;
    if (l > MaxL) return;  // never taken (the launcher); tells the compiler which paths exist
    with_row_slots<(MaxL <= 3)>(nrow, [&](auto slots) {
      constexpr int NV = decltype(slots)::value;
      for (int t0 = 0; t0 < nrow; t0 += NV) {
        Real acc[NV][V];
        EDGEFRAME_UNROLL
        for (int t = 0; t < NV; ++t)
          for (int v = 0; v < V; ++v) acc[t][v] = Real(0);
        for (int q = q_begin; q < q_end; ++q) {
          const bool sender = q < n_send;
          const int e = sender ? send_edges(send_offsets(a) + q) : recv_offsets(a) + (q - n_send);
          const int half = sender ? 0 : C;
          for (int m = -k; m <= k; ++m) {
            Real r[V];
            for (int v = 0; v < V; ++v) r[v] = grad_rot(e, packed_row(l, m, lmax), half + c0 + v);
            const int b = off + (m + k) * nrow + t0;
            EDGEFRAME_UNROLL
            for (int t = 0; t < NV; ++t)
              if (t0 + t < nrow) {
                const Real d = band(e, b + t);
                for (int v = 0; v < V; ++v) acc[t][v] += d * r[v];
              }
          }
        }
        EDGEFRAME_UNROLL
        for (int t = 0; t < NV; ++t)
          if (t0 + t < nrow)
            for (int v = 0; v < V; ++v) put_node_result(grad_n(a, l * l + t0 + t, c0 + v), acc[t][v], split);
      }
    });
  }
};

// The forward into u_out (Real or Bf16 elements; p.u is not used).
template <class Exec, class Real, class Out>
void edge_frame_pack_forward_into(const Exec& exec, const EdgeFramePack<Exec, Real>& p, const View3<Out, Exec>& u_out,
                                  int n_edges, KernelForm form = native_form<Exec>()) {
  const PackForward<Exec, Real, Out> f{p.n, p.g, p.band, p.recv, p.send, u_out, p.lmax, p.mmax, p.channels};
  if (form == KernelForm::device && p.lmax <= kShortDegrees)
    Kokkos::parallel_for("edgeframe::edge_frame_pack", team_policy<Exec, TagDeviceUpTo<kShortDegrees>>(exec, n_edges),
                         f);
  else if (form == KernelForm::device)
    Kokkos::parallel_for("edgeframe::edge_frame_pack", team_policy<Exec, TagDeviceForm>(exec, n_edges), f);
  else
    Kokkos::parallel_for("edgeframe::edge_frame_pack", team_policy<Exec, TagHostForm>(exec, n_edges), f);
}

template <class Exec, class Real>
void edge_frame_pack_forward(const Exec& exec, const EdgeFramePack<Exec, Real>& p, int n_edges,
                             KernelForm form = native_form<Exec>()) {
  edge_frame_pack_forward_into(exec, p, p.u, n_edges, form);
}

// The per-edge half of the backward with grad_g into grad_g_out (Real or Bf16 elements; p.grad_g
// is not used). Bf16 needs the device form (it runs on every backend).
template <class Exec, class Real, class GradG>
void edge_frame_pack_backward_edge_into(const Exec& exec, const EdgeFramePack<Exec, Real>& p,
                                        const View3<GradG, Exec>& grad_g_out, int n_edges,
                                        KernelForm form = native_form<Exec>()) {
  if (!std::is_same_v<GradG, Real> && form == KernelForm::host)
    throw std::invalid_argument("edgeframe: edge_frame_pack_backward_edge's host form writes Real grad_g only");
  const PackBackwardEdge<Exec, Real, GradG> f{p.n,        p.g,         p.grad_u, p.band, p.recv,     p.send, p.grad_rot,
                                              grad_g_out, p.grad_band, p.lmax,   p.mmax, p.channels, n_edges};
  launch_edge_pass("edgeframe::edge_frame_pack_backward_edge", exec, f, n_edges, form);
}

// The per-edge half of the backward (grad_rot, grad_band, grad_g).
template <class Exec, class Real>
void edge_frame_pack_backward_edge(const Exec& exec, const EdgeFramePack<Exec, Real>& p, int n_edges,
                                   KernelForm form = native_form<Exec>()) {
  edge_frame_pack_backward_edge_into(exec, p, p.grad_g, n_edges, form);
}

// Whether the engine's backward-edge pass may write its outputs over its inputs, grad_rot into
// grad_u's memory and grad_g into g's: only where every lane reads each of its grad_u and g
// elements before it writes the same grad_rot and grad_g elements and never reads them again.
// The device form does so for degrees with 2l+1 <= kMaxSlots (gate_rows_of_degree); the host
// form, and the device form's l >= 4 path, read grad_u again for grad_g after grad_rot is
// written. The engine then keeps two [E, K or gate_rows, 2C] tensors less alive during the pass.
template <class Exec>
constexpr bool backward_edge_in_place(int lmax) {
  return native_form<Exec>() == KernelForm::device && 2 * lmax + 1 <= kMaxSlots;
}

// The per-node half of the backward (grad_n from grad_rot).
template <class Exec, class Real>
void edge_frame_pack_backward_node(const Exec& exec, const EdgeFramePack<Exec, Real>& p, int n_nodes,
                                   KernelForm form = native_form<Exec>()) {
  PackBackwardNode<Exec, Real> f{p.band,   p.grad_rot, p.recv_offsets, p.send_offsets, p.send_edges,
                                 p.grad_n, p.lmax,     p.mmax,         p.channels};
  if (form == KernelForm::device) {
    f.split = p.node_split > 0 ? p.node_split : node_pass_split(exec, n_nodes, p.lmax, p.channels);
    if (f.split == 2) Kokkos::deep_copy(exec, p.grad_n, Real(0));
    launch_device_node_pass("edgeframe::edge_frame_pack_backward_node", exec, f, n_nodes, f.split);
  } else
    Kokkos::parallel_for("edgeframe::edge_frame_pack_backward_node", team_policy<Exec, TagHostForm>(exec, n_nodes), f);
}

template <class Exec, class Real>
void edge_frame_pack_backward(const Exec& exec, const EdgeFramePack<Exec, Real>& p, int n_edges, int n_nodes,
                              KernelForm form = native_form<Exec>()) {
  edge_frame_pack_backward_edge(exec, p, n_edges, form);
  edge_frame_pack_backward_node(exec, p, n_nodes, form);
}

}  // namespace edgeframe::kk
