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

  // One row per group of lanes (EdgeLanes: a warp on CUDA, channel c on lane c % 32; a single
  // lane elsewhere); the row sums finish with one butterfly each, which leaves every lane the
  // same value. With a team reduction per sum (team_dot) instead, the kernels took 2 ms forward
  // and 4 ms backward per [646590, 128] call on the H200, twice torch's layer_norm + silu.
  template <class F>
  KOKKOS_INLINE_FUNCTION double row_sum(const Lanes& lanes, const F& f) const {
    double part = 0.0;
    for (int c = lanes.index; c < width; c += Lanes::count) part += f(c);
    return lanes.all_sum(part);
  }

  // mean and 1 / sqrt(var + eps) of row e, two passes (the second over x - mean, as torch).
  KOKKOS_INLINE_FUNCTION void stats(const Lanes& lanes, int e, double& mean, double& rstd) const {
    mean = row_sum(lanes, [&](int c) { return x(e, c); }) / width;
    const double m = mean;
    const double var = row_sum(lanes,
                               [&](int c) {
                                 const double d = x(e, c) - m;
                                 return d * d;
                               }) /
                       width;
    rstd = 1.0 / Kokkos::sqrt(var + eps);
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
    const int e = team.league_rank() * Lanes::edges_per_team + team.team_rank();
    if (e >= rows) return;  // the whole group: every lane of it has this e
    const Lanes lanes = Lanes::here();
    double mean, rstd;
    stats(lanes, e, mean, rstd);
    for (int c = lanes.index; c < width; c += Lanes::count) {
      const Real s = pre_activation(c, (x(e, c) - mean) * rstd);
      y(e, c) = s * sigmoid(s);
    }
  }

  // q = grad_y silu'(s) w, one sigmoid per element: the backward's first pass sums q and q xhat
  // and parks q in grad_a (each lane reads back only the elements it wrote), the second finishes
  // grad_a. Keeping each lane's row values and q in registers instead (one read of a) made the
  // backward slower on the H200 (12.0 against 9.8 ms per step at 646 590 edges, the forward 6.1
  // against 6.6), and so did 4 rows per warp through every pass with all their loads first
  // (backward 13.2 against 10.0 ms; doc/performance.md "Kernel forms"), so both passes stream,
  // one row per warp.
  KOKKOS_INLINE_FUNCTION double q_of(int e, int c, double xhat) const {
    const Real s = pre_activation(c, xhat), sig = sigmoid(s);
    return double(grad_y(e, c)) * double(sig) * (1.0 + double(s) * (1.0 - double(sig))) * double(w(c));
  }

  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, const Team& team) const {
    const int e = team.league_rank() * Lanes::edges_per_team + team.team_rank();
    if (e >= rows) return;
    const Lanes lanes = Lanes::here();
    double mean, rstd;
    stats(lanes, e, mean, rstd);
    double q_part = 0.0, qx_part = 0.0;
    for (int c = lanes.index; c < width; c += Lanes::count) {
      const double xhat = (x(e, c) - mean) * rstd, q = q_of(e, c, xhat);
      q_part += q;
      qx_part += q * xhat;
      grad_a(e, c) = static_cast<Real>(q);
    }
    const double q_mean = lanes.all_sum(q_part) / width, qx_mean = lanes.all_sum(qx_part) / width;
    for (int c = lanes.index; c < width; c += Lanes::count) {
      const double xhat = (x(e, c) - mean) * rstd;
      grad_a(e, c) = static_cast<Real>((double(grad_a(e, c)) - q_mean - xhat * qx_mean) * rstd);
    }
  }
};

template <class Exec, class Real>
void layer_norm_silu_forward(const Exec& exec, const LayerNormSilu<Exec, Real>& f) {
  Kokkos::parallel_for("edgeframe::layer_norm_silu", edge_lanes_policy<Exec, TagForward>(exec, f.rows), f);
}

template <class Exec, class Real>
void layer_norm_silu_backward(const Exec& exec, const LayerNormSilu<Exec, Real>& f) {
  Kokkos::parallel_for("edgeframe::layer_norm_silu_backward", edge_lanes_policy<Exec, TagBackward>(exec, f.rows), f);
}

}  // namespace edgeframe::kk
