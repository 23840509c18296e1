// Truncated bivariate Taylor polynomials ("jets") in (s, t), optionally carrying forward-mode
// derivatives with respect to the three components of the edge vector. Used by wigner_band.hpp
// (see the derivation in band_layout.hpp, step (v)).
//
// Coefficient order: Order 1 -> (1, s, t); Order 2 -> (1, s, t, s^2, t^2, s t).
// Each coefficient holds NT numbers: [0] its value, [1..NT-1] d/dr_k of it (NT = 1 or 4).
#pragma once

#include <Kokkos_Core.hpp>

namespace edgeframe::kk::impl {

template <int Order, int NT>
struct Jet {
  static_assert(Order == 1 || Order == 2, "jets of order 1 (mmax 1) or 2 (mmax 2)");
  static constexpr int J = Order == 1 ? 3 : 6;
  double c[J][NT];

  KOKKOS_INLINE_FUNCTION static Jet constant(double v) {
    Jet r;
    for (int j = 0; j < J; ++j)
      for (int k = 0; k < NT; ++k) r.c[j][k] = 0.0;
    r.c[0][0] = v;
    return r;
  }
};

// r[q] (+)= a[i] * b[j] with the product rule on the tangents; first == true starts r[q].
template <int Order, int NT>
KOKKOS_INLINE_FUNCTION void jet_prod_term(Jet<Order, NT>& r, int q, const Jet<Order, NT>& a, int i,
                                          const Jet<Order, NT>& b, int j, bool first) {
  r.c[q][0] = (first ? 0.0 : r.c[q][0]) + a.c[i][0] * b.c[j][0];
  for (int k = 1; k < NT; ++k) r.c[q][k] = (first ? 0.0 : r.c[q][k]) + a.c[i][0] * b.c[j][k] + a.c[i][k] * b.c[j][0];
}

// a * b, truncated at the jet order.
template <int Order, int NT>
KOKKOS_INLINE_FUNCTION Jet<Order, NT> operator*(const Jet<Order, NT>& a, const Jet<Order, NT>& b) {
  Jet<Order, NT> r;
  jet_prod_term(r, 0, a, 0, b, 0, true);
  jet_prod_term(r, 1, a, 0, b, 1, true);
  jet_prod_term(r, 1, a, 1, b, 0, false);
  jet_prod_term(r, 2, a, 0, b, 2, true);
  jet_prod_term(r, 2, a, 2, b, 0, false);
  if constexpr (Order == 2) {
    jet_prod_term(r, 3, a, 0, b, 3, true);  // s^2
    jet_prod_term(r, 3, a, 1, b, 1, false);
    jet_prod_term(r, 3, a, 3, b, 0, false);
    jet_prod_term(r, 4, a, 0, b, 4, true);  // t^2
    jet_prod_term(r, 4, a, 2, b, 2, false);
    jet_prod_term(r, 4, a, 4, b, 0, false);
    jet_prod_term(r, 5, a, 0, b, 5, true);  // s t
    jet_prod_term(r, 5, a, 1, b, 2, false);
    jet_prod_term(r, 5, a, 2, b, 1, false);
    jet_prod_term(r, 5, a, 5, b, 0, false);
  }
  return r;
}

// (1 + s^2 + t^2) * a: multiplication by the jet of r^2, whose tangents are zero.
template <int Order, int NT>
KOKKOS_INLINE_FUNCTION Jet<Order, NT> times_r2(const Jet<Order, NT>& a) {
  Jet<Order, NT> r = a;
  if constexpr (Order == 2) {
    for (int k = 0; k < NT; ++k) {
      r.c[3][k] += a.c[0][k];
      r.c[4][k] += a.c[0][k];
    }
  }
  return r;
}

// alpha * a + beta * b
template <int Order, int NT>
KOKKOS_INLINE_FUNCTION Jet<Order, NT> axpby(double alpha, const Jet<Order, NT>& a, double beta,
                                            const Jet<Order, NT>& b) {
  Jet<Order, NT> r;
  for (int j = 0; j < Jet<Order, NT>::J; ++j)
    for (int k = 0; k < NT; ++k) r.c[j][k] = alpha * a.c[j][k] + beta * b.c[j][k];
  return r;
}

template <int Order, int NT>
KOKKOS_INLINE_FUNCTION Jet<Order, NT> scaled(double alpha, const Jet<Order, NT>& a) {
  Jet<Order, NT> r;
  for (int j = 0; j < Jet<Order, NT>::J; ++j)
    for (int k = 0; k < NT; ++k) r.c[j][k] = alpha * a.c[j][k];
  return r;
}

}  // namespace edgeframe::kk::impl
