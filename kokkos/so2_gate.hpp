// The gate between the two SO(2) linears of a layer (doc/model.md step 3d), fused into one pass
// over the first linear's output. z [E, (K + L) C] holds, per edge, the first linear's rows in
// packed order with the gate pre-activations inserted after block 0 (the column order of the
// block-0 weight, whose rows are [block-0 outputs (L+1) C | gates L C]):
//   z row q: q <= L -> packed row q (block 0, degree q); L < q <= 2L -> gate of degree q - L;
//            q > 2L -> packed row q - L (blocks m > 0).
// Forward, per edge and channel c: x[row 0] = silu(z_0), and every row r >= 1 of degree l
// times sigmoid(gate_l). Backward: the z gradient of every row and the gates' (summed over the
// rows of their degree). One thread per (edge, channel): coalesced over channels on a GPU.
// On host backends the sigmoids come in from torch (vectorised; computed here, scalar exp in
// double made the host kernel 10x slower than the torch chain it replaced). On
// devices the kernel computes them from z itself (sig0 / sig left empty): torch's two sigmoid
// passes per direction read strided column ranges of z (non-vectorised kernels), wrote [E,
// (L + 1) C] temporaries and the kernel read those again, about 2300 values per edge and layer
// of traffic, and the backward's temporaries sat at the step's memory peak.
// Replaces the torch chain sigmoid / narrow / cat / mul / silu / cat and its backward (slice
// backward fills and adds).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <type_traits>

#include "band_layout.hpp"
#include "bf16.hpp"
#include "kernel_common.hpp"

namespace edgeframe::kk {

// The per-channel passes (Pass: TagForward or TagBackward) compiled for degrees up to MaxL.
template <int MaxL, class Pass>
struct GateUpTo {};

// The outputs x and grad_z have elements Out: Real, or Bf16 (bf16.hpp: each value computed as
// for a Real output, rounded at the store).
template <class Exec, class Real, class Out = Real>
struct So2Gate {
  View2<const Real, Exec> z;       // [E, (K + L) C]
  View2<const Real, Exec> sig0;    // [E, C] sigmoid of z's row 0 (for its SiLU), or empty: computed
  View2<const Real, Exec> sig;     // [E, L C] sigmoid of the gate rows, degree l at (l - 1) C, or empty
  View3<Out, Exec> x;              // [E, K, C] (forward)
  View3<const Real, Exec> grad_x;  // [E, K, C] (backward)
  View2<Out, Exec> grad_z;         // [E, (K + L) C] (backward)
  int lmax = 0, mmax = 0, channels = 0;

  // An output value: rounded to Real, then (Bf16 outputs) to bfloat16.
  KOKKOS_INLINE_FUNCTION static Out put(double v) { return store_as<Out>(static_cast<Real>(v)); }

  // Row of z (in units of C columns) that packed row r reads.
  KOKKOS_INLINE_FUNCTION int z_row(int r) const { return r <= lmax ? r : r + lmax; }
  KOKKOS_INLINE_FUNCTION double zv(int e, int q, int c) const { return double(z(e, q * channels + c)); }
  // The sigmoids of row 0 and of degree l's gate (z row lmax + l): given, or computed in the
  // compute precision Real (float in fp32 / tf32 mode: within an ulp or two of the float the
  // stored sigmoid would be). In double they made the kernel issue-bound on the GPU (ncu,
  // SM 69-80 % busy, DRAM 40-48 % on the H200); the products stay in double.
  KOKKOS_INLINE_FUNCTION static Real sigmoid(Real v) { return Real(1) / (Real(1) + Kokkos::exp(-v)); }
  KOKKOS_INLINE_FUNCTION double s0_at(int e, int c) const {
    return sig0.extent(0) ? double(sig0(e, c)) : double(sigmoid(z(e, c)));
  }
  KOKKOS_INLINE_FUNCTION double gate_at(int e, int l, int c) const {
    return sig.extent(0) ? double(sig(e, (l - 1) * channels + c)) : double(sigmoid(z(e, (lmax + l) * channels + c)));
  }
  // Packed rows of degree l >= 1: (l, 0), then (l, +m) and (l, -m) for m = 1..min(l, mmax).
  // Looping degree by degree keeps each gate in a register: per-degree arrays indexed by a
  // row's degree went to local memory on the GPU.
  KOKKOS_INLINE_FUNCTION int rows_of_degree(int l) const { return 1 + 2 * (l < mmax ? l : mmax); }
  KOKKOS_INLINE_FUNCTION int row_of_degree(int l, int k) const {
    if (k == 0) return l;  // block 0 row (l, 0)
    const int m = (k + 1) / 2;
    return packed_row(l, k % 2 ? m : -m, lmax);
  }

  // One channel of one edge; rows(l, k) gives row_of_degree(l, k) (computed, or from a table).
  template <class Rows>
  KOKKOS_INLINE_FUNCTION void forward_channel(int e, int c, const Rows& rows) const {
    const double z0 = zv(e, 0, c);
    x(e, 0, c) = put(z0 * s0_at(e, c));
    for (int l = 1; l <= lmax; ++l) {
      const double s = gate_at(e, l, c);
      for (int k = 0; k < rows_of_degree(l); ++k) {
        const int r = rows(l, k);
        x(e, r, c) = put(zv(e, z_row(r), c) * s);
      }
    }
  }

  template <class Rows>
  KOKKOS_INLINE_FUNCTION void backward_channel(int e, int c, const Rows& rows) const {
    const double z0 = zv(e, 0, c), s0 = s0_at(e, c);
    grad_z(e, c) = put(double(grad_x(e, 0, c)) * s0 * (1.0 + z0 * (1.0 - s0)));
    for (int l = 1; l <= lmax; ++l) {
      const double s = gate_at(e, l, c);
      double dgate = 0.0;
      for (int k = 0; k < rows_of_degree(l); ++k) {
        const int r = rows(l, k), q = z_row(r);
        const double g = double(grad_x(e, r, c));
        grad_z(e, q * channels + c) = put(g * s);
        dgate += g * zv(e, q, c);
      }
      grad_z(e, (lmax + l) * channels + c) = put(dgate * s * (1.0 - s));
    }
  }

  // Devices: one thread per (edge, channel), rows computed (a table would sit in local memory).
  // The (edge, channel) index is 64-bit: E C passes 2^31 at ~17 M edges for C = 128.
  KOKKOS_INLINE_FUNCTION void operator()(TagForward, std::int64_t i) const {
    forward_channel(int(i / channels), int(i % channels), [this](int l, int k) { return row_of_degree(l, k); });
  }
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, std::int64_t i) const {
    backward_channel(int(i / channels), int(i % channels), [this](int l, int k) { return row_of_degree(l, k); });
  }

  // Degrees up to MaxL (the launcher takes it for lmax <= kShortDegrees): the same arithmetic
  // per element as TagForward / TagBackward, with every load of the thread before its first
  // store. In those forms each row's load follows the previous row's store, and the compiler
  // must keep that order (x and grad_z may alias z as far as it knows), so a thread waited for
  // one load after another: ncu put 60-70 % of the gate's stall cycles on global-load waits
  // (doc/performance.md "Kernel forms"). Register slot l*l + k holds row k of degree l (a
  // compile-time index; the rows' positions are computed). The sigmoids are computed (sig0 and
  // sig empty: the launcher takes these forms only then).
  template <int MaxL>
  KOKKOS_INLINE_FUNCTION void load_rows(int e, int c, Real (&zin)[(MaxL + 1) * (MaxL + 1)],
                                        Real (&gate)[MaxL + 1]) const {
    EDGEFRAME_UNROLL
    for (int l = 0; l <= MaxL; ++l) {
      if (l > lmax) continue;
      gate[l] = l == 0 ? Real(0) : z(e, (lmax + l) * channels + c);
      EDGEFRAME_UNROLL
      for (int k = 0; k < 2 * l + 1; ++k)
        if (k < rows_of_degree(l)) zin[l * l + k] = z(e, z_row(row_of_degree(l, k)) * channels + c);
    }
  }
  template <int MaxL>
  KOKKOS_INLINE_FUNCTION void operator()(GateUpTo<MaxL, TagForward>, std::int64_t i) const {
    const int e = int(i / channels), c = int(i % channels);
    Real zin[(MaxL + 1) * (MaxL + 1)], gate[MaxL + 1];
    load_rows<MaxL>(e, c, zin, gate);
    const double z0 = zin[0];
    x(e, 0, c) = put(z0 * double(sigmoid(zin[0])));
    EDGEFRAME_UNROLL
    for (int l = 1; l <= MaxL; ++l) {
      if (l > lmax) continue;
      const double s = double(sigmoid(gate[l]));
      EDGEFRAME_UNROLL
      for (int k = 0; k < 2 * l + 1; ++k)
        if (k < rows_of_degree(l)) x(e, row_of_degree(l, k), c) = put(double(zin[l * l + k]) * s);
    }
  }
  template <int MaxL>
  KOKKOS_INLINE_FUNCTION void operator()(GateUpTo<MaxL, TagBackward>, std::int64_t i) const {
    const int e = int(i / channels), c = int(i % channels);
    Real zin[(MaxL + 1) * (MaxL + 1)], gate[MaxL + 1], gx[(MaxL + 1) * (MaxL + 1)];
    load_rows<MaxL>(e, c, zin, gate);
    EDGEFRAME_UNROLL
    for (int l = 0; l <= MaxL; ++l) {
      if (l > lmax) continue;
      EDGEFRAME_UNROLL
      for (int k = 0; k < 2 * l + 1; ++k)
        if (k < rows_of_degree(l)) gx[l * l + k] = grad_x(e, row_of_degree(l, k), c);
    }
    const double z0 = zin[0], s0 = double(sigmoid(zin[0]));
    grad_z(e, c) = put(double(gx[0]) * s0 * (1.0 + z0 * (1.0 - s0)));
    EDGEFRAME_UNROLL
    for (int l = 1; l <= MaxL; ++l) {
      if (l > lmax) continue;
      const double s = double(sigmoid(gate[l]));
      double dgate = 0.0;
      EDGEFRAME_UNROLL
      for (int k = 0; k < 2 * l + 1; ++k)
        if (k < rows_of_degree(l)) {
          const double g = double(gx[l * l + k]);
          grad_z(e, z_row(row_of_degree(l, k)) * channels + c) = put(g * s);
          dgate += g * double(zin[l * l + k]);
        }
      grad_z(e, (lmax + l) * channels + c) = put(dgate * s * (1.0 - s));
    }
  }

  // Host backends: one edge per iteration, channels innermost over contiguous rows (the loops
  // vectorise); the same expression per element as the device order, and the gate gradient
  // summed over a degree's rows in the same order, so both give the same numbers.
  static constexpr int kHostChannels = 1024;  // wider rows take the per-channel path
  // These read the given sigmoids (without them the launchers below take the per-channel order).
  KOKKOS_INLINE_FUNCTION void operator()(TagValue, int e) const {
    if (channels > kHostChannels) {
      for (int c = 0; c < channels; ++c) forward_channel(e, c, [this](int l, int k) { return row_of_degree(l, k); });
      return;
    }
    const Real *ze = &z(e, 0), *s0 = &sig0(e, 0);
    Out* xe = &x(e, 0, 0);
    for (int c = 0; c < channels; ++c) xe[c] = put(double(ze[c]) * double(s0[c]));
    for (int l = 1; l <= lmax; ++l) {
      const Real* sl = &sig(e, (l - 1) * channels);
      for (int k = 0; k < rows_of_degree(l); ++k) {
        const int r = row_of_degree(l, k);
        const Real* zq = ze + z_row(r) * channels;
        Out* xr = xe + r * channels;
        for (int c = 0; c < channels; ++c) xr[c] = put(double(zq[c]) * double(sl[c]));
      }
    }
  }
  KOKKOS_INLINE_FUNCTION void operator()(TagValueAndGrad, int e) const {
    if (channels > kHostChannels) {
      for (int c = 0; c < channels; ++c) backward_channel(e, c, [this](int l, int k) { return row_of_degree(l, k); });
      return;
    }
    const Real *ze = &z(e, 0), *s0 = &sig0(e, 0), *gxe = &grad_x(e, 0, 0);
    Out* gze = &grad_z(e, 0);
    for (int c = 0; c < channels; ++c) {
      const double z0 = ze[c], s = s0[c];
      gze[c] = put(double(gxe[c]) * s * (1.0 + z0 * (1.0 - s)));
    }
    double dgate[kHostChannels];
    for (int l = 1; l <= lmax; ++l) {
      const Real* sl = &sig(e, (l - 1) * channels);
      for (int c = 0; c < channels; ++c) dgate[c] = 0.0;
      for (int k = 0; k < rows_of_degree(l); ++k) {
        const int r = row_of_degree(l, k), q = z_row(r);
        const Real *g = gxe + r * channels, *zq = ze + q * channels;
        Out* out = gze + q * channels;
        for (int c = 0; c < channels; ++c) {
          out[c] = put(double(g[c]) * double(sl[c]));
          dgate[c] += double(g[c]) * double(zq[c]);
        }
      }
      Out* gg = gze + (lmax + l) * channels;
      for (int c = 0; c < channels; ++c) {
        const double sv = sl[c];
        gg[c] = put(dgate[c] * sv * (1.0 - sv));
      }
    }
  }
};

// Tags: on host backends TagValue / TagValueAndGrad stand for "forward / backward, one edge per
// iteration"; same arithmetic per element as the device order.
template <class Exec>
constexpr bool gate_per_edge() {
  return std::is_same_v<typename Exec::memory_space, Kokkos::HostSpace>;
}

// Whether the caller passes the sigmoids in (host backends) or leaves sig0 / sig empty for the
// kernel to compute (devices).
template <class Exec>
constexpr bool gate_takes_sigmoids() {
  return gate_per_edge<Exec>();
}

// Host backends with the sigmoids given: one edge per iteration (EdgeTag); else one (edge,
// channel) per iteration, the order that computes missing sigmoids: GateUpTo<kShortDegrees,
// ChannelTag> for lmax <= kShortDegrees, ChannelTag above.
template <class EdgeTag, class ChannelTag, class Exec, class Real, class Out>
void launch_gate(const char* label, const Exec& exec, const So2Gate<Exec, Real, Out>& f, int n_edges) {
  if constexpr (gate_per_edge<Exec>()) {
    if (f.sig0.extent(0) != 0 && f.sig.extent(0) != 0) {
      Kokkos::parallel_for(label, Range<Exec, EdgeTag>(exec, 0, n_edges), f);
      return;
    }
  }
  using Index = Kokkos::IndexType<std::int64_t>;
  const std::int64_t items = std::int64_t(n_edges) * f.channels;
  if (f.lmax <= kShortDegrees && f.sig0.extent(0) == 0 && f.sig.extent(0) == 0)  // GateUpTo computes them
    Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec, GateUpTo<kShortDegrees, ChannelTag>, Index>(exec, 0, items),
                         f);
  else
    Kokkos::parallel_for(label, Kokkos::RangePolicy<Exec, ChannelTag, Index>(exec, 0, items), f);
}

template <class Exec, class Real, class Out>
void so2_gate_forward(const Exec& exec, const So2Gate<Exec, Real, Out>& f, int n_edges) {
  launch_gate<TagValue, TagForward>("edgeframe::so2_gate", exec, f, n_edges);
}

template <class Exec, class Real, class Out>
void so2_gate_backward(const Exec& exec, const So2Gate<Exec, Real, Out>& f, int n_edges) {
  launch_gate<TagValueAndGrad, TagBackward>("edgeframe::so2_gate_backward", exec, f, n_edges);
}

}  // namespace edgeframe::kk
