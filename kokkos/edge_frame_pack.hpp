// edge_frame_pack: gather the sender's and the receiver's normalised features, rotate them into
// the edge frame with the band, pack by m and apply the radial multipliers (doc/model.md 3b-c):
//   u[e, packed_row(l, m), c] = g[e, gate_row(l, m), c] * sum_{m'} D^l_{m m'}(R_e) x_e[(l, m'), c]
//   x_e[:, c] = n[send(e), :, c] for c < C,  n[recv(e), :, c - C] for C <= c < 2C.
// Index helpers and layouts: band_layout.hpp. One team per edge (forward, backward-edge) or per
// node (backward-node), vector lanes over channels; every output element has one writer, the
// node pass walks the receiver CSR and the sender grouping: no atomics, deterministic.
#pragma once

#include <Kokkos_Core.hpp>

#include "band_layout.hpp"
#include "kernel_common.hpp"

namespace edgeframe::kk {

struct TagBackwardEdge {};
struct TagBackwardNode {};

template <class Exec, class Real>
struct EdgeFramePack {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  View3<const Real, Exec> n;        // [N, D, C] normalised node features
  View2<const Real, Exec> band;     // [E, band_size]
  View3<const Real, Exec> g;        // [E, gate_rows, 2C] radial multipliers
  View1<const int, Exec> recv, send;
  View1<const int, Exec> recv_offsets, send_offsets, send_edges;  // graph.hpp
  View3<Real, Exec> u;              // [E, K, 2C] forward output
  View3<const Real, Exec> grad_u;   // [E, K, 2C] backward input
  View3<Real, Exec> grad_n;         // [N, D, C] backward output (overwritten)
  View2<Real, Exec> grad_band;      // [E, band_size] backward output (overwritten)
  View3<Real, Exec> grad_g;         // [E, gate_rows, 2C] backward output (overwritten)
  int lmax, mmax, channels;

  // Rotated, unmodulated value of packed row (l, m), channel c of edge e.
  KOKKOS_INLINE_FUNCTION double rotated(int e, int i, int j, int l, int boff, int c) const {
    const int node = c < channels ? j : i;
    const int cc = c < channels ? c : c - channels;
    double acc = 0.0;
    for (int mp = -l; mp <= l; ++mp) acc += double(band(e, boff + mp + l)) * double(n(node, l * l + l + mp, cc));
    return acc;
  }

  KOKKOS_INLINE_FUNCTION void operator()(TagForward, const Team& team) const {
    const int e = team.league_rank();
    const int i = recv(e), j = send(e);
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      for (int m = -k; m <= k; ++m) {
        const int boff = off + (m + k) * (2 * l + 1);
        const int prow = packed_row(l, m, lmax), grow = gate_row(l, m, lmax);
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, 2 * channels), [&](int c) {
          u(e, prow, c) = static_cast<Real>(double(g(e, grow, c)) * rotated(e, i, j, l, boff, c));
        });
      }
    }
  }

  // Per edge: grad_g and grad_band.
  KOKKOS_INLINE_FUNCTION void operator()(TagBackwardEdge, const Team& team) const {
    const int e = team.league_rank();
    const int i = recv(e), j = send(e);
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      for (int am = 0; am <= k; ++am) {
        // the +m and -m rows share one multiplier: grad_g sums both
        const int grow = gate_row(l, am, lmax);
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, 2 * channels), [&](int c) {
          double acc = 0.0;
          for (int sign = 1; sign >= (am == 0 ? 1 : -1); sign -= 2) {
            const int m = sign * am;
            acc += double(grad_u(e, packed_row(l, m, lmax), c)) *
                   rotated(e, i, j, l, off + (m + k) * (2 * l + 1), c);
          }
          grad_g(e, grow, c) = static_cast<Real>(acc);
        });
      }
      for (int m = -k; m <= k; ++m) {
        const int prow = packed_row(l, m, lmax), grow = gate_row(l, m, lmax);
        for (int mp = -l; mp <= l; ++mp) {
          double acc = 0.0;
          Kokkos::parallel_reduce(
              Kokkos::TeamVectorRange(team, 2 * channels),
              [&](int c, double& sum) {
                const int node = c < channels ? j : i;
                const int cc = c < channels ? c : c - channels;
                sum += double(g(e, grow, c)) * double(grad_u(e, prow, c)) * double(n(node, l * l + l + mp, cc));
              },
              acc);
          Kokkos::single(Kokkos::PerTeam(team), [&]() {
            grad_band(e, off + (m + k) * (2 * l + 1) + mp + l) = static_cast<Real>(acc);
          });
        }
      }
    }
  }

  // Per node a: grad_n[a, (l, m'), c] = sum over edges where a is the sender (channels 0..C-1)
  // and where a is the receiver (channels C..2C-1) of sum_m D_{m m'} g grad_u.
  KOKKOS_INLINE_FUNCTION void operator()(TagBackwardNode, const Team& team) const {
    const int a = team.league_rank();
    for (int l = 0, off = 0; l <= lmax; off += (2 * band_k(l, mmax) + 1) * (2 * l + 1), ++l) {
      const int k = band_k(l, mmax);
      for (int mp = -l; mp <= l; ++mp) {
        Kokkos::parallel_for(Kokkos::TeamVectorRange(team, channels), [&](int c) {
          double acc = 0.0;
          for (int q = send_offsets(a); q < send_offsets(a + 1); ++q) {
            const int e = send_edges(q);
            for (int m = -k; m <= k; ++m)
              acc += double(band(e, off + (m + k) * (2 * l + 1) + mp + l)) *
                     double(g(e, gate_row(l, m, lmax), c)) * double(grad_u(e, packed_row(l, m, lmax), c));
          }
          for (int e = recv_offsets(a); e < recv_offsets(a + 1); ++e) {
            for (int m = -k; m <= k; ++m)
              acc += double(band(e, off + (m + k) * (2 * l + 1) + mp + l)) *
                     double(g(e, gate_row(l, m, lmax), c + channels)) *
                     double(grad_u(e, packed_row(l, m, lmax), c + channels));
          }
          grad_n(a, l * l + l + mp, c) = static_cast<Real>(acc);
        });
      }
    }
  }
};

template <class Exec, class Real>
void edge_frame_pack_forward(const Exec& exec, const EdgeFramePack<Exec, Real>& f, int n_edges) {
  Kokkos::parallel_for("edgeframe::edge_frame_pack", Kokkos::TeamPolicy<Exec, TagForward>(exec, n_edges, Kokkos::AUTO), f);
}

template <class Exec, class Real>
void edge_frame_pack_backward(const Exec& exec, const EdgeFramePack<Exec, Real>& f, int n_edges, int n_nodes) {
  Kokkos::parallel_for("edgeframe::edge_frame_pack_backward_edge",
                       Kokkos::TeamPolicy<Exec, TagBackwardEdge>(exec, n_edges, Kokkos::AUTO), f);
  Kokkos::parallel_for("edgeframe::edge_frame_pack_backward_node",
                       Kokkos::TeamPolicy<Exec, TagBackwardNode>(exec, n_nodes, Kokkos::AUTO), f);
}

}  // namespace edgeframe::kk
