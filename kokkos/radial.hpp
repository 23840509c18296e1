// radial: Bessel radial basis times the polynomial envelope, and their r-derivatives
// (doc/model.md, forward pass step 2). x = r / r_cut, p = envelope order:
//   u(x)     = 1 - (p+1)(p+2)/2 x^p + p(p+2) x^(p+1) - p(p+1)/2 x^(p+2)   (x < 1), else 0
//   du/dx    = -p(p+1)(p+2)/2 x^(p-1) (1 - x)^2
//   rbf_n(r) = sqrt(2/r_cut) sin(n pi r / r_cut) / r * u(r / r_cut),  n = 1..n_rbf
//   d rbf_n / dr = sqrt(2/r_cut) [ (k_n cos(k_n r) / r - sin(k_n r) / r^2) u + sin(k_n r) / r u' / r_cut ]
// with k_n = n pi / r_cut.
#pragma once

#include <Kokkos_Core.hpp>

#include "kernel_common.hpp"

namespace edgeframe::kk {

struct EnvelopeValue {
  double u, du_dr;  // 1, 1/Angstrom
};

KOKKOS_INLINE_FUNCTION EnvelopeValue envelope(double r, double r_cut, int p) {
  const double x = r / r_cut;
  if (x >= 1.0) return {0.0, 0.0};
  double xp1 = 1.0;  // x^(p-1)
  for (int k = 0; k < p - 1; ++k) xp1 *= x;
  const double xp = xp1 * x;
  const double c0 = 0.5 * (p + 1) * (p + 2), c1 = double(p) * (p + 2), c2 = 0.5 * p * (p + 1);
  const double u = 1.0 - c0 * xp + c1 * xp * x - c2 * xp * x * x;
  const double omx = 1.0 - x;
  const double du_dx = -0.5 * p * (p + 1) * (p + 2) * xp1 * omx * omx;
  return {u, du_dx / r_cut};
}

// Forward: rbf, env and their r-derivatives from the edge vectors. Backward: the gradient of a
// loss with respect to the edge vectors, from its gradients with respect to rbf and env.
template <class Exec, class Real = double>
struct Radial {
  Vec3View<const double, Exec> vec;  // [E, 3] Angstrom
  View2<Real, Exec> rbf;             // [E, n_rbf] 1/Angstrom^(3/2)
  View1<Real, Exec> env;             // [E]
  View2<double, Exec> drbf;          // [E, n_rbf] d rbf / dr
  View1<double, Exec> denv;          // [E] du/dr, 1/Angstrom
  View2<const Real, Exec> grad_rbf;  // [E, n_rbf] (backward)
  View1<const Real, Exec> grad_env;  // [E] or extent 0 (backward)
  Vec3View<double, Exec> grad_vec;   // [E, 3] (backward output)
  double r_cut;                      // Angstrom
  int n_rbf, p;
  bool accumulate = false;  // backward adds to grad_vec instead of overwriting it

  KOKKOS_INLINE_FUNCTION double length(int e) const {
    return Kokkos::sqrt(vec(e, 0) * vec(e, 0) + vec(e, 1) * vec(e, 1) + vec(e, 2) * vec(e, 2));
  }

  KOKKOS_INLINE_FUNCTION void operator()(TagForward, int e) const {
    const double r = length(e);
    const EnvelopeValue u = envelope(r, r_cut, p);
    env(e) = static_cast<Real>(u.u);
    denv(e) = u.du_dr;
    const double pref = Kokkos::sqrt(2.0 / r_cut);
    for (int n = 1; n <= n_rbf; ++n) {
      const double k = n * Kokkos::numbers::pi / r_cut;
      const double s = Kokkos::sin(k * r), c = Kokkos::cos(k * r);
      rbf(e, n - 1) = static_cast<Real>(pref * s / r * u.u);
      drbf(e, n - 1) = pref * ((k * c / r - s / (r * r)) * u.u + s / r * u.du_dr);
    }
  }

  KOKKOS_INLINE_FUNCTION void operator()(TagBackward, int e) const {
    const double r = length(e);
    double g = grad_env.extent(0) ? double(grad_env(e)) * denv(e) : 0.0;
    if (grad_rbf.extent(0))
      for (int n = 0; n < n_rbf; ++n) g += double(grad_rbf(e, n)) * drbf(e, n);
    for (int k = 0; k < 3; ++k) grad_vec(e, k) = (accumulate ? grad_vec(e, k) : 0.0) + g * vec(e, k) / r;
  }
};

}  // namespace edgeframe::kk
