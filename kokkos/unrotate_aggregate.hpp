// unrotate_aggregate: rotate each edge's message back with the same band, apply the envelope
// and sum into the receiver (doc/model.md 3g):
//   agg[i, (l, m'), c] = scale * sum_{e into i} u(r_e) sum_{|m| <= min(l, mmax)} D^l_{m m'}(R_e) w[e, packed_row(l, m), c]
// with scale = 1 / avg_neighbors. The sum over edges is a segmented sum over the receiver CSR
// (graph.hpp), in edge order: no atomics, deterministic. Backward per edge: grad_w, grad_band,
// grad_env, each element with a single writer.
#pragma once

#include <Kokkos_Core.hpp>

#include "band_layout.hpp"
#include "kernel_common.hpp"

namespace edgeframe::kk {

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

  // Per node a, vector lanes over channels.
  KOKKOS_INLINE_FUNCTION void operator()(TagForward, const Team& team) const {
    const int a = team.league_rank();
    const int e0 = recv_offsets(a), e1 = recv_offsets(a + 1);
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      for (int mp = -l; mp <= l; ++mp) {
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, channels), [&](int c) {
          double acc = 0.0;
          for (int e = e0; e < e1; ++e) {
            double msg = 0.0;
            for (int m = -k; m <= k; ++m)
              msg += double(band(e, off + (m + k) * (2 * l + 1) + mp + l)) * double(w(e, packed_row(l, m, lmax), c));
            acc += double(env(e)) * msg;
          }
          agg(a, l * l + l + mp, c) = static_cast<Real>(scale * acc);
        });
      }
    }
  }

  // Per edge e: with G = grad_agg[recv(e)] and rg[row, c] = sum_{m'} D_{m m'} G[(l, m'), c],
  //   grad_w = scale u rg,  grad_env = scale sum_{row, c} w rg,  grad_band[(l, m, m')] = scale u sum_c w G.
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, const Team& team) const {
    const int e = team.league_rank();
    const int i = recv(e);
    const double ue = double(env(e));
    double genv = 0.0;
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      for (int m = -k; m <= k; ++m) {
        const int prow = packed_row(l, m, lmax);
        const int boff = off + (m + k) * (2 * l + 1);
        double part = 0.0;
        Kokkos::parallel_reduce(
            Kokkos::TeamVectorRange(team, channels),
            [&](int c, double& sum) {
              double rg = 0.0;
              for (int mp = -l; mp <= l; ++mp) rg += double(band(e, boff + mp + l)) * double(grad_agg(i, l * l + l + mp, c));
              grad_w(e, prow, c) = static_cast<Real>(scale * ue * rg);
              sum += double(w(e, prow, c)) * rg;
            },
            part);
        genv += part;
        for (int mp = -l; mp <= l; ++mp) {
          double acc = 0.0;
          Kokkos::parallel_reduce(
              Kokkos::TeamVectorRange(team, channels),
              [&](int c, double& sum) { sum += double(w(e, prow, c)) * double(grad_agg(i, l * l + l + mp, c)); }, acc);
          Kokkos::single(Kokkos::PerTeam(team), [&]() { grad_band(e, boff + mp + l) = static_cast<Real>(scale * ue * acc); });
        }
      }
    }
    Kokkos::single(Kokkos::PerTeam(team), [&]() { grad_env(e) = static_cast<Real>(scale * genv); });
  }
};

template <class Exec, class Real>
void unrotate_aggregate_forward(const Exec& exec, const UnrotateAggregate<Exec, Real>& f, int n_nodes) {
  Kokkos::parallel_for("edgeframe::unrotate_aggregate", Kokkos::TeamPolicy<Exec, TagForward>(exec, n_nodes, Kokkos::AUTO), f);
}

template <class Exec, class Real>
void unrotate_aggregate_backward(const Exec& exec, const UnrotateAggregate<Exec, Real>& f, int n_edges) {
  Kokkos::parallel_for("edgeframe::unrotate_aggregate_backward",
                       Kokkos::TeamPolicy<Exec, TagBackward>(exec, n_edges, Kokkos::AUTO), f);
}

}  // namespace edgeframe::kk
