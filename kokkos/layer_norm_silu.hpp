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
// Statistics and channel sums in double for every Real (as rms_norm.hpp). One team per row.
#pragma once

#include <Kokkos_Core.hpp>

#include "kernel_common.hpp"

namespace edgeframe::kk {

template <class Exec, class Real>
struct LayerNormSilu {
  View2<const Real, Exec> a;                     // [E, H] input rows
  View2<const Real, Exec> table_src, table_tgt;  // [Z, H] or empty (extent 0): no embedding add
  View1<const int, Exec> z_send, z_recv;         // [E] table rows, with the tables
  View1<const Real, Exec> w, b;                  // [H] affine weight and bias
  View2<Real, Exec> y;                           // [E, H] forward output
  View2<const Real, Exec> grad_y;                // [E, H] backward input
  View2<Real, Exec> grad_a;                      // [E, H] backward output (may not alias a)
  int width = 0;
  double eps = 1e-5;

  KOKKOS_INLINE_FUNCTION double x(int e, int c) const {
    double v = double(a(e, c));
    if (table_src.extent(0) > 0) v += double(table_src(z_send(e), c)) + double(table_tgt(z_recv(e), c));
    return v;
  }

  // mean and 1 / sqrt(var + eps) of row e, two passes (the second over x - mean, as torch).
  template <class Team>
  KOKKOS_INLINE_FUNCTION void stats(const Team& team, int e, double& mean, double& rstd) const {
    const int H = width;
    mean = team_dot(team, H, [&](int c) { return x(e, c); }) / H;
    const double m = mean;
    const double var = team_dot(team, H, [&](int c) {
                         const double d = x(e, c) - m;
                         return d * d;
                       }) / H;
    rstd = 1.0 / Kokkos::sqrt(var + eps);
  }

  template <class Team>
  KOKKOS_INLINE_FUNCTION void operator()(TagForward, const Team& team) const {
    const int e = team.league_rank();
    double mean, rstd;
    stats(team, e, mean, rstd);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, width), [&](int c) {
      const double s = (x(e, c) - mean) * rstd * double(w(c)) + double(b(c));
      y(e, c) = static_cast<Real>(s / (1.0 + Kokkos::exp(-s)));
    });
  }

  template <class Team>
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, const Team& team) const {
    const int e = team.league_rank(), H = width;
    double mean, rstd;
    stats(team, e, mean, rstd);
    // q = grad_y silu'(s) w per channel, made again inside each sum and in the final pass.
    auto q_of = [&](int c, double xhat) {
      const double s = xhat * double(w(c)) + double(b(c));
      const double sig = 1.0 / (1.0 + Kokkos::exp(-s));
      return double(grad_y(e, c)) * sig * (1.0 + s * (1.0 - sig)) * double(w(c));
    };
    const double q_mean = team_dot(team, H, [&](int c) { return q_of(c, (x(e, c) - mean) * rstd); }) / H;
    const double qx_mean = team_dot(team, H, [&](int c) {
                             const double xhat = (x(e, c) - mean) * rstd;
                             return q_of(c, xhat) * xhat;
                           }) / H;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, H), [&](int c) {
      const double xhat = (x(e, c) - mean) * rstd;
      grad_a(e, c) = static_cast<Real>((q_of(c, xhat) - q_mean - xhat * qx_mean) * rstd);
    });
  }
};

template <class Exec, class Real>
void layer_norm_silu_forward(const Exec& exec, const LayerNormSilu<Exec, Real>& f, int rows) {
  Kokkos::parallel_for("edgeframe::layer_norm_silu", team_policy<Exec, TagForward>(exec, rows), f);
}

template <class Exec, class Real>
void layer_norm_silu_backward(const Exec& exec, const LayerNormSilu<Exec, Real>& f, int rows) {
  Kokkos::parallel_for("edgeframe::layer_norm_silu_backward", team_policy<Exec, TagBackward>(exec, rows), f);
}

}  // namespace edgeframe::kk
