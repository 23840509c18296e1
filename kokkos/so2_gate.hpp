// The gate between the two SO(2) linears of a layer (doc/model.md step 3d), fused into one pass
// over the first linear's output. z [E, (K + L) C] holds, per edge, the first linear's rows in
// packed order with the gate pre-activations inserted after block 0 (the column order of the
// block-0 weight, whose rows are [block-0 outputs (L+1) C | gates L C]):
//   z row q: q <= L -> packed row q (block 0, degree q); L < q <= 2L -> gate of degree q - L;
//            q > 2L -> packed row q - L (blocks m > 0).
// Forward, per edge and channel c: x[row 0] = silu(z_0), and every row r >= 1 of degree l
// times sigmoid(gate_l). Backward: the z gradient of every row and the gates' (summed over the
// rows of their degree). One thread per (edge, channel): coalesced over channels on a GPU.
// Replaces the torch chain sigmoid / narrow / cat / mul / silu / cat and its backward (slice
// backward fills and adds), doc/gpu-notes.md, fourth session.
#pragma once

#include <Kokkos_Core.hpp>

#include "band_layout.hpp"
#include "kernel_common.hpp"

namespace edgeframe::kk {

template <class Exec, class Real>
struct So2Gate {
  View2<const Real, Exec> z;        // [E, (K + L) C]
  View3<Real, Exec> x;              // [E, K, C] (forward)
  View3<const Real, Exec> grad_x;   // [E, K, C] (backward)
  View2<Real, Exec> grad_z;         // [E, (K + L) C] (backward)
  int lmax = 0, mmax = 0, channels = 0;

  // Row of z (in units of C columns) that packed row r reads.
  KOKKOS_INLINE_FUNCTION int z_row(int r) const { return r <= lmax ? r : r + lmax; }
  KOKKOS_INLINE_FUNCTION double zv(int e, int q, int c) const { return double(z(e, q * channels + c)); }
  KOKKOS_INLINE_FUNCTION static double sigmoid(double v) { return 1.0 / (1.0 + Kokkos::exp(-v)); }
  // Packed rows of degree l >= 1: (l, 0), then (l, +m) and (l, -m) for m = 1..min(l, mmax).
  // Looping degree by degree keeps each gate in a register: per-degree arrays indexed by a
  // row's degree went to local memory on the GPU.
  KOKKOS_INLINE_FUNCTION int rows_of_degree(int l) const { return 1 + 2 * (l < mmax ? l : mmax); }
  KOKKOS_INLINE_FUNCTION int row_of_degree(int l, int k) const {
    if (k == 0) return l;  // block 0 row (l, 0)
    const int m = (k + 1) / 2;
    return packed_row(l, k % 2 ? m : -m, lmax);
  }

  KOKKOS_INLINE_FUNCTION void operator()(TagForward, int i) const {
    const int e = i / channels, c = i % channels;
    const double z0 = zv(e, 0, c);
    x(e, 0, c) = static_cast<Real>(z0 * sigmoid(z0));
    for (int l = 1; l <= lmax; ++l) {
      const double s = sigmoid(zv(e, lmax + l, c));
      for (int k = 0; k < rows_of_degree(l); ++k) {
        const int r = row_of_degree(l, k);
        x(e, r, c) = static_cast<Real>(zv(e, z_row(r), c) * s);
      }
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, int i) const {
    const int e = i / channels, c = i % channels;
    const double z0 = zv(e, 0, c), s0 = sigmoid(z0);
    grad_z(e, c) = static_cast<Real>(double(grad_x(e, 0, c)) * s0 * (1.0 + z0 * (1.0 - s0)));
    for (int l = 1; l <= lmax; ++l) {
      const double s = sigmoid(zv(e, lmax + l, c));
      double dgate = 0.0;
      for (int k = 0; k < rows_of_degree(l); ++k) {
        const int r = row_of_degree(l, k), q = z_row(r);
        const double g = double(grad_x(e, r, c));
        grad_z(e, q * channels + c) = static_cast<Real>(g * s);
        dgate += g * zv(e, q, c);
      }
      grad_z(e, (lmax + l) * channels + c) = static_cast<Real>(dgate * s * (1.0 - s));
    }
  }
};

template <class Exec, class Real>
void so2_gate_forward(const Exec& exec, const So2Gate<Exec, Real>& f, int n_edges) {
  Kokkos::parallel_for("edgeframe::so2_gate", Range<Exec, TagForward>(exec, 0, n_edges * f.channels), f);
}

template <class Exec, class Real>
void so2_gate_backward(const Exec& exec, const So2Gate<Exec, Real>& f, int n_edges) {
  Kokkos::parallel_for("edgeframe::so2_gate_backward", Range<Exec, TagBackward>(exec, 0, n_edges * f.channels), f);
}

}  // namespace edgeframe::kk
