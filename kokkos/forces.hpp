// forces: from dE/dr_e (one backward pass) to forces, per-atom virials and the global sums
// (doc/model.md step 5), deterministically:
//   F_a  = sum_{e: recv(e) = a} dE/dr_e - sum_{e: send(e) = a} dE/dr_e
//   W_e  = -r_e (x) dE/dr_e  (W_ab = -r_a g_b), half to each end: W_a = sum over both sets of W_e / 2
//   W    = sum_e W_e,   E = sum_{a < n_local} E_a
// Node sums walk the receiver CSR and the sender grouping (graph.hpp); global sums add fixed
// chunks of kSumChunk items in order, then the chunk partials in order on one thread, so the
// result does not depend on the thread count.
#pragma once

#include <Kokkos_Core.hpp>

#include "kernel_common.hpp"

namespace edgeframe::kk {

inline constexpr int kSumChunk = 256;

template <class Exec>
struct NodeForces {
  View1<const int, Exec> recv_offsets, send_offsets, send_edges;
  Vec3View<const double, Exec> vec, grad;  // [E, 3] r_e (Angstrom), dE/dr_e (eV/Angstrom)
  Vec3View<double, Exec> forces;           // [N, 3] eV/Angstrom
  View2<double, Exec> atom_virial;         // [N, 9] eV, row-major 3x3, or extent 0

  KOKKOS_INLINE_FUNCTION void edge_virial(int e, double w[9]) const {
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) w[3 * a + b] = -vec(e, a) * grad(e, b);
  }

  KOKKOS_INLINE_FUNCTION void operator()(int a) const {
    double f[3] = {0.0, 0.0, 0.0}, w[9] = {}, we[9];
    const bool virial = atom_virial.extent(0) > 0;
    for (int e = recv_offsets(a); e < recv_offsets(a + 1); ++e) {
      for (int k = 0; k < 3; ++k) f[k] += grad(e, k);
      if (virial) {
        edge_virial(e, we);
        for (int q = 0; q < 9; ++q) w[q] += 0.5 * we[q];
      }
    }
    for (int s = send_offsets(a); s < send_offsets(a + 1); ++s) {
      const int e = send_edges(s);
      for (int k = 0; k < 3; ++k) f[k] -= grad(e, k);
      if (virial) {
        edge_virial(e, we);
        for (int q = 0; q < 9; ++q) w[q] += 0.5 * we[q];
      }
    }
    for (int k = 0; k < 3; ++k) forces(a, k) = f[k];
    if (virial)
      for (int q = 0; q < 9; ++q) atom_virial(a, q) = w[q];
  }
};

// Global virial (9) and energy (1) in fixed-order chunks. partials: [n_chunks, 10].
// With forces: 0 x every force component is added to W_xx, which leaves W_xx as it is while
// every force is finite and makes it NaN otherwise (0 x Inf and 0 x NaN are NaN), so that the
// host's finiteness check of the ten sums (finish_step) covers every force too, with no
// reduction and no host read of its own.
template <class Exec>
struct GlobalSums {
  Vec3View<const double, Exec> vec, grad;  // [E, 3]
  View1<const double, Exec> energies;      // [N] eV
  Vec3View<const double, Exec> forces;     // [N, 3] eV/A, or extent 0 (no forces this step)
  View2<double, Exec> partials;            // [n_chunks, 10]
  View1<double, Exec> sums;                // [10]: W row-major, then E
  int n_edges, n_local, n_chunks;

  KOKKOS_INLINE_FUNCTION void operator()(TagForward, int c) const {
    double acc[10] = {};
    for (int e = c * kSumChunk; e < (c + 1) * kSumChunk && e < n_edges; ++e)
      for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) acc[3 * a + b] -= vec(e, a) * grad(e, b);
    for (int i = c * kSumChunk; i < (c + 1) * kSumChunk && i < n_local; ++i) acc[9] += energies(i);
    const int n_forces = static_cast<int>(forces.extent(0));
    for (int i = c * kSumChunk; i < (c + 1) * kSumChunk && i < n_forces; ++i)
      acc[0] += 0.0 * forces(i, 0) + 0.0 * forces(i, 1) + 0.0 * forces(i, 2);
    for (int q = 0; q < 10; ++q) partials(c, q) = acc[q];
  }
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, int) const {
    double acc[10] = {};
    for (int c = 0; c < n_chunks; ++c)
      for (int q = 0; q < 10; ++q) acc[q] += partials(c, q);
    for (int q = 0; q < 10; ++q) sums(q) = acc[q];
  }
};

template <class Exec>
void node_forces(const Exec& exec, const NodeForces<Exec>& f, int n_nodes) {
  Kokkos::parallel_for("edgeframe::node_forces", Range<Exec>(exec, 0, n_nodes), f);
}

template <class Exec>
void global_sums(const Exec& exec, const GlobalSums<Exec>& s) {
  Kokkos::parallel_for("edgeframe::global_sums_chunks", Range<Exec, TagForward>(exec, 0, s.n_chunks), s);
  Kokkos::parallel_for("edgeframe::global_sums_total", Range<Exec, TagBackward>(exec, 0, 1), s);
}

}  // namespace edgeframe::kk
