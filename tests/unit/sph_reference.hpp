// Test-only, slow, plain-double references for spherical harmonics, edge frames and the dense
// real Wigner D. Written independently of the kernels (std::assoc_legendre, least squares), so
// that the kernels are checked against the definitions in doc/model.md and not against
// themselves.
#pragma once

#include <array>
#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

namespace edgeframe::test {

using Vec3 = std::array<double, 3>;
using Mat3 = std::array<Vec3, 3>;  // rows

inline double factorial(int n) {
  double f = 1.0;
  for (int i = 2; i <= n; ++i) f *= i;
  return f;
}

// P_l^m(cos t) without the Condon-Shortley phase, from cos t and sin t separately (textbook
// recurrence in l); sin t from hypot keeps the poles accurate, where std::assoc_legendre, which
// takes only x = cos t, loses digits in sqrt(1 - x^2). Checked against std::assoc_legendre away
// from the poles in test_wigner_band.cpp.
inline double assoc_legendre_cs(int l, int m, double c, double s) {
  double pmm = 1.0;
  for (int i = 1; i <= m; ++i) pmm *= (2 * i - 1) * s;
  if (l == m) return pmm;
  double p1 = pmm, p = c * (2 * m + 1) * pmm;
  for (int ll = m + 2; ll <= l; ++ll) {
    const double pn = ((2 * ll - 1) * c * p - (ll + m - 1) * p1) / (ll - m);
    p1 = p;
    p = pn;
  }
  return p;
}

// Real orthonormal Y_l^m(v), v a unit vector; no Condon-Shortley phase. doc/model.md
// "Indices and spherical harmonics".
inline double real_ylm(int l, int m, const Vec3& v) {
  const double rho = std::hypot(v[0], v[1]), r = std::sqrt(rho * rho + v[2] * v[2]);
  const double phi = std::atan2(v[1], v[0]);
  const int am = std::abs(m);
  const double n = std::sqrt((2 * l + 1) / (4 * M_PI) * factorial(l - am) / factorial(l + am));
  const double p = assoc_legendre_cs(l, am, v[2] / r, rho / r);
  if (m == 0) return n * p;
  if (m > 0) return std::sqrt(2.0) * n * p * std::cos(am * phi);
  return std::sqrt(2.0) * n * p * std::sin(am * phi);
}

inline Vec3 normalized(const Vec3& v) {
  const double r = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
  return {v[0] / r, v[1] / r, v[2] / r};
}

inline Vec3 apply(const Mat3& R, const Vec3& v) {
  Vec3 out{};
  for (int i = 0; i < 3; ++i) out[i] = R[i][0] * v[0] + R[i][1] * v[1] + R[i][2] * v[2];
  return out;
}

// R_e with rows (e1, e2, n) per doc/model.md "Edge frame", rolled by `roll` about n.
inline Mat3 reference_frame(const Vec3& r, double roll = 0.0) {
  const Vec3 n = normalized(r);
  const Vec3 a = std::fabs(n[1]) <= 0.9 ? Vec3{0, 1, 0} : Vec3{1, 0, 0};
  const double an = a[0] * n[0] + a[1] * n[1] + a[2] * n[2];
  const Vec3 e1 = normalized({a[0] - an * n[0], a[1] - an * n[1], a[2] - an * n[2]});
  const Vec3 e2 = {n[1] * e1[2] - n[2] * e1[1], n[2] * e1[0] - n[0] * e1[2], n[0] * e1[1] - n[1] * e1[0]};
  const double c = std::cos(roll), s = std::sin(roll);
  Mat3 R;
  for (int i = 0; i < 3; ++i) {
    R[0][i] = c * e1[i] + s * e2[i];
    R[1][i] = -s * e1[i] + c * e2[i];
    R[2][i] = n[i];
  }
  return R;
}

// Dense D^l(R) [2l+1][2l+1] by least squares over sample directions: D = B A^{-1} with
// A = sum_k Y(v_k) Y(v_k)^T, B = sum_k Y(R v_k) Y(v_k)^T (exact up to rounding since the
// relation Y(R v) = D Y(v) is linear and the samples span the space).
inline std::vector<std::vector<double>> dense_wigner_d(int l, const Mat3& R) {
  const int d = 2 * l + 1;
  std::mt19937_64 rng(1234 + l);
  std::normal_distribution<double> g;
  std::vector<std::vector<double>> A(d, std::vector<double>(d, 0.0)), B = A;
  for (int k = 0; k < 6 * d; ++k) {
    const Vec3 v = normalized({g(rng), g(rng), g(rng)});
    const Vec3 rv = apply(R, v);
    std::vector<double> y(d), ry(d);
    for (int m = -l; m <= l; ++m) {
      y[m + l] = real_ylm(l, m, v);
      ry[m + l] = real_ylm(l, m, rv);
    }
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        A[i][j] += y[i] * y[j];
        B[i][j] += ry[i] * y[j];
      }
  }
  // Solve D A = B, i.e. A D^T = B^T (A symmetric), by Gauss-Jordan with partial pivoting.
  std::vector<std::vector<double>> M(d, std::vector<double>(2 * d));
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) {
      M[i][j] = A[i][j];
      M[i][d + j] = B[j][i];
    }
  for (int c = 0; c < d; ++c) {
    int piv = c;
    for (int i = c + 1; i < d; ++i)
      if (std::fabs(M[i][c]) > std::fabs(M[piv][c])) piv = i;
    std::swap(M[c], M[piv]);
    if (std::fabs(M[c][c]) < 1e-12) throw std::runtime_error("dense_wigner_d: singular samples");
    for (int i = 0; i < d; ++i) {
      if (i == c) continue;
      const double f = M[i][c] / M[c][c];
      for (int j = c; j < 2 * d; ++j) M[i][j] -= f * M[c][j];
    }
  }
  std::vector<std::vector<double>> D(d, std::vector<double>(d));
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) D[j][i] = M[i][d + j] / M[i][i];  // row i of D^T is column i of D
  return D;
}

}  // namespace edgeframe::test
