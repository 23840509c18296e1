// wigner_band: edge vectors -> banded Wigner D of each edge frame, and its derivative with
// respect to the edge vector. Layout and derivation: band_layout.hpp.
#pragma once

#include <Kokkos_Core.hpp>

#include "band_layout.hpp"
#include "jet.hpp"
#include "kernel_common.hpp"

namespace edgeframe::kk {

// doc/model.md "Edge frame": |n_y| above this uses the helper axis x_hat (chart 2).
inline constexpr double kChartThreshold = 0.9;

// Frame (e1, e2, n) of one edge and, when with_grad, d(.)_i / d r_k in d*[i][k].
struct EdgeFrame {
  double n[3], e1[3], e2[3];
  double dn[3][3], de1[3][3], de2[3][3];
  bool chart2;
};

KOKKOS_INLINE_FUNCTION void cross3(const double a[3], const double b[3], double out[3]) {
  out[0] = a[1] * b[2] - a[2] * b[1];
  out[1] = a[2] * b[0] - a[0] * b[2];
  out[2] = a[0] * b[1] - a[1] * b[0];
}

// r: edge vector (Angstrom, nonzero). roll: extra rotation of (e1, e2) about n, radians (tests
// of roll invariance; 0 in production): e1' = cos a e1 + sin a e2, e2' = -sin a e1 + cos a e2.
KOKKOS_INLINE_FUNCTION EdgeFrame edge_frame(const double r[3], double roll, bool with_grad) {
  EdgeFrame f;
  const double rho = Kokkos::sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]);
  for (int i = 0; i < 3; ++i) f.n[i] = r[i] / rho;
  f.chart2 = Kokkos::fabs(f.n[1]) > kChartThreshold;
  const int ax = f.chart2 ? 0 : 1;  // helper axis a = x_hat or y_hat
  const double an = f.n[ax];
  double u[3];
  for (int i = 0; i < 3; ++i) u[i] = (i == ax ? 1.0 : 0.0) - an * f.n[i];
  const double un = Kokkos::sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);  // >= 0.436
  for (int i = 0; i < 3; ++i) f.e1[i] = u[i] / un;
  cross3(f.n, f.e1, f.e2);
  if (with_grad) {
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 3; ++k) f.dn[i][k] = ((i == k ? 1.0 : 0.0) - f.n[i] * f.n[k]) / rho;
    for (int k = 0; k < 3; ++k) {
      double du[3];
      for (int i = 0; i < 3; ++i) du[i] = -f.dn[ax][k] * f.n[i] - an * f.dn[i][k];
      const double proj = f.e1[0] * du[0] + f.e1[1] * du[1] + f.e1[2] * du[2];
      for (int i = 0; i < 3; ++i) f.de1[i][k] = (du[i] - f.e1[i] * proj) / un;
      const double dnk[3] = {f.dn[0][k], f.dn[1][k], f.dn[2][k]};
      const double de1k[3] = {f.de1[0][k], f.de1[1][k], f.de1[2][k]};
      double a[3], b[3];
      cross3(dnk, f.e1, a);
      cross3(f.n, de1k, b);
      for (int i = 0; i < 3; ++i) f.de2[i][k] = a[i] + b[i];
    }
  }
  if (roll != 0.0) {
    const double c = Kokkos::cos(roll), s = Kokkos::sin(roll);
    for (int i = 0; i < 3; ++i) {
      const double a = f.e1[i], b = f.e2[i];
      f.e1[i] = c * a + s * b;
      f.e2[i] = -s * a + c * b;
      if (with_grad)
        for (int k = 0; k < 3; ++k) {
          const double da = f.de1[i][k], db = f.de2[i][k];
          f.de1[i][k] = c * da + s * db;
          f.de2[i][k] = -s * da + c * db;
        }
    }
  }
  return f;
}

// Band of every edge. Order = mmax (1 or 2). Real is the storage type of band and dband; the
// construction runs in double.
template <class Exec, int Order, class Real = double>
struct WignerBand {
  Kokkos::View<const double* [3], Kokkos::LayoutRight, typename Exec::memory_space> vec;  // [E, 3] Angstrom
  View1<const double, Exec> roll;  // [E] radians, or extent 0 for no roll
  View2<Real, Exec> band;          // [E, band_size]
  View3<Real, Exec> dband;         // [E, band_size, 3] d band / d r_e, 1/Angstrom (TagValueAndGrad)
  int lmax;

  KOKKOS_INLINE_FUNCTION void operator()(TagValue, int e) const { compute<false>(e); }
  KOKKOS_INLINE_FUNCTION void operator()(TagValueAndGrad, int e) const { compute<true>(e); }

  template <bool Grad>
  KOKKOS_INLINE_FUNCTION void compute(int e) const {
    constexpr int NT = Grad ? 4 : 1;
    using J = impl::Jet<Order, NT>;
    const double r[3] = {vec(e, 0), vec(e, 1), vec(e, 2)};
    const EdgeFrame f = edge_frame(r, roll.extent(0) ? roll(e) : 0.0, Grad);
    // Jets of x, y, z at n + s e1 + t e2 (band_layout.hpp step (v)).
    J xyz[3];
    for (int i = 0; i < 3; ++i) {
      xyz[i] = J::constant(0.0);
      xyz[i].c[0][0] = f.n[i];
      xyz[i].c[1][0] = f.e1[i];
      xyz[i].c[2][0] = f.e2[i];
      if constexpr (Grad)
        for (int k = 0; k < 3; ++k) {
          xyz[i].c[0][1 + k] = f.dn[i][k];
          xyz[i].c[1][1 + k] = f.de1[i][k];
          xyz[i].c[2][1 + k] = f.de2[i][k];
        }
    }
    J cm = J::constant(1.0), sm = J::constant(0.0);  // C_m, S_m
    double dfact = 1.0;                              // (2m-1)!!
    for (int m = 0; m <= lmax; ++m) {
      if (m > 0) {
        const J cn = axpby(1.0, xyz[0] * cm, -1.0, xyz[1] * sm);
        const J sn = axpby(1.0, xyz[0] * sm, 1.0, xyz[1] * cm);
        cm = cn;
        sm = sn;
        dfact *= 2 * m - 1;
      }
      J p2 = J::constant(0.0), p1 = J::constant(0.0);  // Pi_{l-2}^m, Pi_{l-1}^m
      for (int l = m; l <= lmax; ++l) {
        J p;
        if (l == m)
          p = J::constant(dfact);
        else if (l == m + 1)
          p = scaled(double(2 * m + 1), xyz[2] * p1);
        else
          p = axpby(double(2 * l - 1) / (l - m), xyz[2] * p1, -double(l + m - 1) / (l - m), times_r2(p2));
        if (m == 0) {
          write_column(e, l, 0, p);
        } else {
          // S_l^{+-m} / N_l0 = sqrt2 sqrt((l-m)!/(l+m)!) {C_m, S_m} Pi_l^m
          double ratio = 1.0;
          for (int j = l - m + 1; j <= l + m; ++j) ratio *= j;
          const double norm = Kokkos::sqrt(2.0 / ratio);
          write_column(e, l, m, scaled(norm, cm * p));
          write_column(e, l, -m, scaled(norm, sm * p));
        }
        p2 = p1;
        p1 = p;
      }
    }
  }

  // Column m' of the band rows of degree l from F = S_l^{m'}(n + s e1 + t e2) / N_l0.
  template <int NT>
  KOKKOS_INLINE_FUNCTION void write_column(int e, int l, int mp, const impl::Jet<Order, NT>& F) const {
    const int k = band_k(l, Order);
    const double a1 = l >= 1 ? Kokkos::sqrt(2.0 / (l * (l + 1))) : 0.0;
    const double a2 = l >= 2 ? 2.0 * Kokkos::sqrt(2.0 / double((l - 1) * l * (l + 1) * (l + 2))) : 0.0;
    for (int m = -k; m <= k; ++m) {
      double v[NT];
      for (int q = 0; q < NT; ++q) {
        v[q] = m == 0 ? F.c[0][q] : (m == 1 ? a1 * F.c[1][q] : a1 * F.c[2][q]);
        if constexpr (Order == 2) {
          if (m == 2) v[q] = a2 * (F.c[3][q] - F.c[4][q]);
          if (m == -2) v[q] = a2 * F.c[5][q];
        }
      }
      const int idx = band_index(l, m, mp, Order);
      band(e, idx) = static_cast<Real>(v[0]);
      if constexpr (NT == 4)
        for (int q = 0; q < 3; ++q) dband(e, idx, q) = static_cast<Real>(v[1 + q]);
    }
  }
};

// Backward: grad_vec[e, k] = sum_b grad_band[e, b] d band[e, b] / d r_e,k.
template <class Exec, class Real>
struct WignerBandBackward {
  View2<const Real, Exec> grad_band;  // [E, band_size]
  View3<const Real, Exec> dband;      // [E, band_size, 3] 1/Angstrom
  Vec3View<double, Exec> grad_vec;    // [E, 3] output (overwritten)
  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, int e) const {
    double acc[3] = {0.0, 0.0, 0.0};
    const int size = static_cast<int>(grad_band.extent(1));
    for (int b = 0; b < size; ++b) {
      const double gb = double(grad_band(e, b));
      for (int k = 0; k < 3; ++k) acc[k] += gb * double(dband(e, b, k));
    }
    for (int k = 0; k < 3; ++k) grad_vec(e, k) = acc[k];
  }
};

template <class Exec, class Real>
void wigner_band_backward(const Exec& exec, View2<const Real, Exec> grad_band, View3<const Real, Exec> dband,
                          Vec3View<double, Exec> grad_vec) {
  Kokkos::parallel_for("edgeframe::wigner_band_backward",
                       Range<Exec, TagBackward>(exec, 0, static_cast<int>(grad_band.extent(0))),
                       WignerBandBackward<Exec, Real>{grad_band, dband, grad_vec});
}

// Launch: band [E, band_size(lmax, mmax)], and dband [E, band_size, 3] unless it has extent 0.
template <class Exec, class Real>
void compute_wigner_band(const Exec& exec,
                         Kokkos::View<const double* [3], Kokkos::LayoutRight, typename Exec::memory_space> vec,
                         View1<const double, Exec> roll, View2<Real, Exec> band, View3<Real, Exec> dband, int lmax,
                         int mmax) {
  const int n_edges = static_cast<int>(vec.extent(0));
  const bool grad = dband.extent(0) > 0;
  auto launch = [&](auto functor) {
    if (grad)
      Kokkos::parallel_for("edgeframe::wigner_band_grad", Range<Exec, TagValueAndGrad>(exec, 0, n_edges), functor);
    else
      Kokkos::parallel_for("edgeframe::wigner_band", Range<Exec, TagValue>(exec, 0, n_edges), functor);
  };
  if (mmax == 1)
    launch(WignerBand<Exec, 1, Real>{vec, roll, band, dband, lmax});
  else
    launch(WignerBand<Exec, 2, Real>{vec, roll, band, dband, lmax});
}

}  // namespace edgeframe::kk
