// Equivariant RMS norm of node features (doc/model.md: the layer norms, the feed-forward's norm
// and the readout's): per node and degree l,
//   out[n, (l, m), c] = h[n, (l, m), c] * r[n, l] * scale[l, c],
//   r[n, l] = (mean over m and c of h[n, (l, m), c]^2 + eps)^(-1/2),
// with the mean and r in double for every compute dtype (as the reference). Backward, with
// g = grad_out * scale and M = (2l+1) C elements per block:
//   grad_h = r g - h r^3 / M * sum_{m, c} g h.
// One kernel per direction replaces the per-degree torch chain (cast, square, mean, add, sqrt,
// divide, cast back, scale, cat: about 9 ops per degree forward and twice that backward), whose
// launches and host dispatch dominated small GPU steps (nsys on the H200).
#pragma once

#include <Kokkos_Core.hpp>

#include "kernel_common.hpp"

namespace edgeframe::kk {

template <class Exec, class Real>
struct RmsNorm {
  // h: node n's rows start at h_data + n * node_stride; within a node, rows (l, m) of C channels
  // are contiguous (row l*l + m + l). Only rows of degree <= lmax are read.
  const Real* h_data = nullptr;
  long node_stride = 0;
  View2<const Real, Exec> scale;     // [lmax + 1, C]
  View3<Real, Exec> out;             // [N, (lmax+1)^2, C] (forward)
  View2<double, Exec> r;             // [N, lmax + 1] (forward writes, backward reads)
  View3<const Real, Exec> grad_out;  // [N, (lmax+1)^2, C] (backward)
  View3<Real, Exec> grad_h;          // [N, (lmax+1)^2, C] (backward)
  int lmax = 0, channels = 0;
  double eps = 0.0;

  KOKKOS_INLINE_FUNCTION double h(int n, int row, int c) const {
    return double(h_data[n * node_stride + long(row) * channels + c]);
  }

  template <class Team>
  KOKKOS_INLINE_FUNCTION void operator()(TagForward, const Team& team) const {
    const int n = team.league_rank() / (lmax + 1), l = team.league_rank() % (lmax + 1);
    const int row0 = l * l, count = (2 * l + 1) * channels;
    const double sum = team_dot(team, count, [&](int k) {
      const double v = h(n, row0 + k / channels, k % channels);
      return v * v;
    });
    const double rms = Kokkos::sqrt(sum / count + eps);
    Kokkos::single(Kokkos::PerTeam(team), [&]() { r(n, l) = 1.0 / rms; });
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, count), [&](int k) {
      const int row = row0 + k / channels, c = k % channels;
      // Rounded to Real before the scale, as the reference's (h / rms).to(dtype) * scale.
      out(n, row, c) = static_cast<Real>(h(n, row, c) / rms) * scale(l, c);
    });
  }

  template <class Team>
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, const Team& team) const {
    const int n = team.league_rank() / (lmax + 1), l = team.league_rank() % (lmax + 1);
    const int row0 = l * l, count = (2 * l + 1) * channels;
    const double rn = r(n, l);
    const double gh = team_dot(team, count, [&](int k) {
      const int row = row0 + k / channels, c = k % channels;
      return double(grad_out(n, row, c)) * double(scale(l, c)) * h(n, row, c);
    });
    const double coef = rn * rn * rn / count * gh;
    Kokkos::parallel_for(Kokkos::TeamVectorRange(team, count), [&](int k) {
      const int row = row0 + k / channels, c = k % channels;
      const double g = double(grad_out(n, row, c)) * double(scale(l, c));
      grad_h(n, row, c) = static_cast<Real>(rn * g - h(n, row, c) * coef);
    });
  }
};

template <class Exec, class Real>
void rms_norm_forward(const Exec& exec, const RmsNorm<Exec, Real>& f, int n_nodes) {
  Kokkos::parallel_for("edgeframe::rms_norm", team_policy<Exec, TagForward>(exec, n_nodes * (f.lmax + 1)), f);
}

template <class Exec, class Real>
void rms_norm_backward(const Exec& exec, const RmsNorm<Exec, Real>& f, int n_nodes) {
  Kokkos::parallel_for("edgeframe::rms_norm_backward", team_policy<Exec, TagBackward>(exec, n_nodes * (f.lmax + 1)), f);
}

}  // namespace edgeframe::kk
