// fairchem's rms_norm_sh over node features (model v2's norms: before each layer's messages,
// before its feed-forward, before the head). Per node n, with x = h except that degree 0 is
// centred over the channels (x[0, c] = h[0, c] - mean_c h[0, c]):
//   ms[n]        = sum_l 1/(L+1) mean_{m, c} x[(l, m), c]^2          (degree-balanced)
//   out[(l,m),c] = x[(l, m), c] r[n] w[l, c] (+ b[c] on degree 0),  r = (ms + eps)^(-1/2)
// Backward, with q = grad_out w, S = sum_{rows, c} q x and rw_l = 1 / ((L+1)(2l+1) C):
//   grad_x[(l,m),c] = r q - r^3 rw_l x S,  grad_h = grad_x, degree 0 minus its channel mean.
// One kernel per direction in place of about 12 torch ops forward and twice that backward (cat,
// narrow, mean, square, sum, rsqrt, index_select, multiply, add): node-sized work whose
// launches, not bytes, cost the time. Statistics in double for every Real; nothing is kept for
// the backward but h (the mean and r are made again from it). One team per node.
#pragma once

#include <Kokkos_Core.hpp>

#include "kernel_common.hpp"

namespace edgeframe::kk {

template <class Exec, class Real>
struct RmsNormSh {
  View3<const Real, Exec> h;         // [N, (L+1)^2, C]
  View2<const Real, Exec> w;         // [L+1, C]
  View1<const Real, Exec> b;         // [C] degree-0 bias
  View3<Real, Exec> out;             // [N, (L+1)^2, C] forward output
  View3<const Real, Exec> grad_out;  // [N, (L+1)^2, C] backward input
  View3<Real, Exec> grad_h;          // [N, (L+1)^2, C] backward output
  int lmax = 0, channels = 0;
  double eps = 0.0;

  KOKKOS_INLINE_FUNCTION static int degree(int row) {
    int l = 0;
    while ((l + 1) * (l + 1) <= row) ++l;
    return l;
  }
  // 1 / ((L+1)(2l+1) C): the weight of one element of degree l in ms.
  KOKKOS_INLINE_FUNCTION double element_weight(int l) const {
    return 1.0 / (double(lmax + 1) * double(2 * l + 1) * channels);
  }

  // Degree-0 channel mean and r of node n.
  template <class Team>
  KOKKOS_INLINE_FUNCTION void stats(const Team& team, int n, double& mean0, double& r) const {
    const int C = channels, count = (lmax + 1) * (lmax + 1) * C;
    mean0 = team_dot(team, C, [&](int c) { return double(h(n, 0, c)); }) / C;
    const double m0 = mean0;
    const double ms = team_dot(team, count, [&](int k) {
      const int row = k / C, c = k % C;
      const double x = double(h(n, row, c)) - (row == 0 ? m0 : 0.0);
      return x * x * element_weight(degree(row));
    });
    r = 1.0 / Kokkos::sqrt(ms + eps);
  }

  template <class Team>
  KOKKOS_INLINE_FUNCTION void operator()(TagForward, const Team& team) const {
    const int n = team.league_rank(), C = channels, count = (lmax + 1) * (lmax + 1) * C;
    double mean0, r;
    stats(team, n, mean0, r);
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, count), [&](int k) {
      const int row = k / C, c = k % C;
      const double x = double(h(n, row, c)) - (row == 0 ? mean0 : 0.0);
      out(n, row, c) = static_cast<Real>(x * r * double(w(degree(row), c)) + (row == 0 ? double(b(c)) : 0.0));
    });
  }

  template <class Team>
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, const Team& team) const {
    const int n = team.league_rank(), C = channels, count = (lmax + 1) * (lmax + 1) * C;
    double mean0, r;
    stats(team, n, mean0, r);
    auto x_of = [&](int row, int c) { return double(h(n, row, c)) - (row == 0 ? mean0 : 0.0); };
    auto q_of = [&](int row, int c) { return double(grad_out(n, row, c)) * double(w(degree(row), c)); };
    const double S = team_dot(team, count, [&](int k) { return q_of(k / C, k % C) * x_of(k / C, k % C); });
    const double r3S = r * r * r * S;
    auto gx = [&](int row, int c) { return r * q_of(row, c) - r3S * element_weight(degree(row)) * x_of(row, c); };
    const double gx0_mean = team_dot(team, C, [&](int c) { return gx(0, c); }) / C;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, count), [&](int k) {
      const int row = k / C, c = k % C;
      grad_h(n, row, c) = static_cast<Real>(gx(row, c) - (row == 0 ? gx0_mean : 0.0));
    });
  }
};

template <class Exec, class Real>
void rms_norm_sh_forward(const Exec& exec, const RmsNormSh<Exec, Real>& f, int n_nodes) {
  Kokkos::parallel_for("edgeframe::rms_norm_sh", team_policy<Exec, TagForward>(exec, n_nodes), f);
}

template <class Exec, class Real>
void rms_norm_sh_backward(const Exec& exec, const RmsNormSh<Exec, Real>& f, int n_nodes) {
  Kokkos::parallel_for("edgeframe::rms_norm_sh_backward", team_policy<Exec, TagBackward>(exec, n_nodes), f);
}

}  // namespace edgeframe::kk
