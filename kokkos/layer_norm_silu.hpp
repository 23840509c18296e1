// LayerNorm + SiLU over the rows of an edge tensor: the two hidden layers of model v2's radial
// MLPs (fairchem RadialMLP: Linear, LayerNorm, SiLU, Linear, LayerNorm, SiLU, Linear). Per row e
// of width H,
//   x[e, :]  = a[e, :] (+ table_src[z_send[e], :] + table_tgt[z_recv[e], :] where the tables are set)
//   y[e, :]  = silu(xhat[e, :] w + b),  xhat = (x - mean x) / sqrt(var x + eps)   (biased var)
// The optional tables are the first layer's source and target atom embeddings, already through
// that layer's linear (model_v2.cpp): adding them here saves two gathers and an add per radial
// MLP. Backward (grad with respect to a only: tables, w, b are constants), with s = xhat w + b,
// ds = grad_y silu'(s), q = ds w:
//   grad_a = (q - mean q - xhat mean(q xhat)) / sqrt(var + eps)
// Nothing but a is kept for the backward: mean, var and s are made again from it (a row of H
// values), where torch's layer_norm + silu keep the normalised rows and their statistics.
// Statistics and channel sums in double for every Real (as rms_norm.hpp); s and its sigmoid in
// the compute precision Real.
#pragma once

#include <Kokkos_Core.hpp>

#include "kernel_common.hpp"
#include "warp_reduce.hpp"

namespace edgeframe::kk {

template <class Exec, class Real>
struct LayerNormSilu {
  using Team = typename Kokkos::TeamPolicy<Exec>::member_type;
  using Lanes = EdgeLanes<Exec>;
  View2<const Real, Exec> a;                     // [E, H] input rows
  View2<const Real, Exec> table_src, table_tgt;  // [Z, H] or empty (extent 0): no embedding add
  View1<const int, Exec> z_send, z_recv;         // [E] table rows, with the tables
  View1<const Real, Exec> w, b;                  // [H] affine weight and bias
  View2<Real, Exec> y;                           // [E, H] forward output
  View2<const Real, Exec> grad_y;                // [E, H] backward input
  View2<Real, Exec> grad_a;                      // [E, H] backward output (may not alias a or grad_y)
  int width = 0, rows = 0;
  double eps = 1e-5;

  KOKKOS_INLINE_FUNCTION double x(int e, int c) const {
    double v = double(a(e, c));
    if (table_src.extent(0) > 0) v += double(table_src(z_send(e), c)) + double(table_tgt(z_recv(e), c));
    return v;
  }

  // kRows rows per group of lanes (EdgeLanes: a warp on CUDA, channel c on lane c % 32; a single
  // lane elsewhere), each row's sums finished by one butterfly, which leaves every lane the same
  // value. The rows go through every pass together: each channel step loads the element of all
  // kRows rows before it computes or stores any, and their butterflies are independent, so a
  // warp has kRows times the loads and shuffles in flight. One row per warp left the kernels
  // waiting on loads and shuffles (ncu on the H200: DRAM 16-19 % busy, 40 % of the stall cycles
  // on load waits; doc/performance.md "Kernel forms"). Per row the products and sums are those
  // of one row at a time, in the same order. With a team reduction per sum (team_dot) instead,
  // the kernels took 2 ms forward and 4 ms backward per [646590, 128] call on the H200, twice
  // torch's layer_norm + silu.
  static constexpr int kRows = 4;

  // The first row of this group and how many of its kRows rows exist (0: none).
  KOKKOS_INLINE_FUNCTION int first_row(const Team& team, int& n) const {
    const int e0 = (team.league_rank() * Lanes::edges_per_team + team.team_rank()) * kRows;
    n = e0 >= rows ? 0 : (rows - e0 < kRows ? rows - e0 : kRows);
    return e0;
  }

  // mean and 1 / sqrt(var + eps) of rows e0 .. e0 + n - 1, two passes (the second over
  // x - mean, as torch).
  KOKKOS_INLINE_FUNCTION void stats(const Lanes& lanes, int e0, int n, double (&mean)[kRows],
                                    double (&rstd)[kRows]) const {
    double part[kRows];
    EDGEFRAME_UNROLL
    for (int r = 0; r < kRows; ++r) part[r] = 0.0;
    for (int c = lanes.index; c < width; c += Lanes::count) {
      double v[kRows];
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r) v[r] = r < n ? x(e0 + r, c) : 0.0;
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r) part[r] += v[r];
    }
    EDGEFRAME_UNROLL
    for (int r = 0; r < kRows; ++r) {
      mean[r] = lanes.all_sum(part[r]) / width;
      part[r] = 0.0;
    }
    for (int c = lanes.index; c < width; c += Lanes::count) {
      double v[kRows];
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r) v[r] = r < n ? x(e0 + r, c) : 0.0;
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r) {
        const double d = v[r] - mean[r];
        part[r] += d * d;
      }
    }
    EDGEFRAME_UNROLL
    for (int r = 0; r < kRows; ++r) rstd[r] = 1.0 / Kokkos::sqrt(lanes.all_sum(part[r]) / width + eps);
  }

  // s = xhat w + b in double, rounded to the compute precision Real for its sigmoid (float in
  // fp32 / tf32 mode, as so2_gate.hpp's). With three sigmoids per element in double the backward
  // took 16.2 ms per step at 646 590 edges on the H200, with one in Real 9.9 ms (doc/performance.md
  // "Kernel forms").
  KOKKOS_INLINE_FUNCTION static Real sigmoid(Real v) { return Real(1) / (Real(1) + Kokkos::exp(-v)); }
  KOKKOS_INLINE_FUNCTION Real pre_activation(int c, double xhat) const {
    return static_cast<Real>(xhat * double(w(c)) + double(b(c)));
  }

  KOKKOS_INLINE_FUNCTION void operator()(TagForward, const Team& team) const {
    int n;
    const int e0 = first_row(team, n);
    if (n == 0) return;  // the whole group: every lane of it has this e0
    const Lanes lanes = Lanes::here();
    double mean[kRows], rstd[kRows];
    stats(lanes, e0, n, mean, rstd);
    for (int c = lanes.index; c < width; c += Lanes::count) {
      double v[kRows];
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r) v[r] = r < n ? x(e0 + r, c) : 0.0;
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r)
        if (r < n) {
          const Real s = pre_activation(c, (v[r] - mean[r]) * rstd[r]);
          y(e0 + r, c) = s * sigmoid(s);
        }
    }
  }

  // q = grad_y silu'(s) w, one sigmoid per element: the backward's first pass sums q and q xhat
  // and parks q in grad_a (each lane reads back only the elements it wrote), the second finishes
  // grad_a. Keeping each lane's row values and q in registers instead (one read of a) made the
  // one-row backward slower on the H200 (12.0 against 9.8 ms per step at 646 590 edges, the
  // forward 6.1 against 6.6; doc/performance.md "Kernel forms"), so both passes stream.
  KOKKOS_INLINE_FUNCTION double q_of(int c, double xhat, Real gy) const {
    const Real s = pre_activation(c, xhat), sig = sigmoid(s);
    return double(gy) * double(sig) * (1.0 + double(s) * (1.0 - double(sig))) * double(w(c));
  }

  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, const Team& team) const {
    int n;
    const int e0 = first_row(team, n);
    if (n == 0) return;
    const Lanes lanes = Lanes::here();
    double mean[kRows], rstd[kRows], q_part[kRows], qx_part[kRows];
    stats(lanes, e0, n, mean, rstd);
    EDGEFRAME_UNROLL
    for (int r = 0; r < kRows; ++r) q_part[r] = qx_part[r] = 0.0;
    for (int c = lanes.index; c < width; c += Lanes::count) {
      double v[kRows];
      Real gy[kRows];
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r) {
        v[r] = r < n ? x(e0 + r, c) : 0.0;
        gy[r] = r < n ? grad_y(e0 + r, c) : Real(0);
      }
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r)
        if (r < n) {
          const double xhat = (v[r] - mean[r]) * rstd[r], q = q_of(c, xhat, gy[r]);
          q_part[r] += q;
          qx_part[r] += q * xhat;
          grad_a(e0 + r, c) = static_cast<Real>(q);
        }
    }
    double q_mean[kRows], qx_mean[kRows];
    EDGEFRAME_UNROLL
    for (int r = 0; r < kRows; ++r) {
      q_mean[r] = lanes.all_sum(q_part[r]) / width;
      qx_mean[r] = lanes.all_sum(qx_part[r]) / width;
    }
    for (int c = lanes.index; c < width; c += Lanes::count) {
      double v[kRows];
      Real q[kRows];
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r) {
        v[r] = r < n ? x(e0 + r, c) : 0.0;
        q[r] = r < n ? grad_a(e0 + r, c) : Real(0);
      }
      EDGEFRAME_UNROLL
      for (int r = 0; r < kRows; ++r)
        if (r < n) {
          const double xhat = (v[r] - mean[r]) * rstd[r];
          grad_a(e0 + r, c) = static_cast<Real>((double(q[r]) - q_mean[r] - xhat * qx_mean[r]) * rstd[r]);
        }
    }
  }
};

// One group of lanes per kRows rows (edge_lanes_policy: edges_per_team groups per team).
template <class Exec, class Tag, class F>
Kokkos::TeamPolicy<Exec, Tag> layer_norm_silu_policy(const Exec& exec, const F& f) {
  return edge_lanes_policy<Exec, Tag>(exec, (f.rows + F::kRows - 1) / F::kRows);
}

template <class Exec, class Real>
void layer_norm_silu_forward(const Exec& exec, const LayerNormSilu<Exec, Real>& f) {
  Kokkos::parallel_for("edgeframe::layer_norm_silu", layer_norm_silu_policy<Exec, TagForward>(exec, f), f);
}

template <class Exec, class Real>
void layer_norm_silu_backward(const Exec& exec, const LayerNormSilu<Exec, Real>& f) {
  Kokkos::parallel_for("edgeframe::layer_norm_silu_backward", layer_norm_silu_policy<Exec, TagBackward>(exec, f), f);
}

}  // namespace edgeframe::kk
