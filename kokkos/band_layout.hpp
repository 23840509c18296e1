// The (l, m) index convention, the band layout and the packed-by-m row order: written once, here.
// Every kernel, the evaluator and the tests take their indices from this header.
//
// Coefficients (doc/model.md "Indices and spherical harmonics")
//   A node feature holds, per channel, D = (L+1)^2 real spherical-harmonic coefficients; (l, m)
//   with m = -l..l sits at coeff_index(l, m) = l*l + l + m. Real orthonormal harmonics, polar
//   axis z, no Condon-Shortley phase, so Y_1 = sqrt(3/4pi) (y, z, x) at indices 1, 2, 3.
//   Real Wigner D: Y_l(R n) = D^l(R) Y_l(n) for every rotation R (column vector of 2l+1).
//
// Band (the rows of D^l(R_e) that consumers with |m| <= mmax read)
//   For l = 0..L let k(l) = min(l, mmax). The band of one edge stores, l outer, then the rows
//   m = -k..k, then the columns m' = -l..l:
//       band[band_offset(l) + (m + k) * (2l + 1) + (m' + l)] = D^l_{m m'}(R_e)
//   band_offset(l) = sum_{l' < l} (2 k(l') + 1)(2 l' + 1); band_size = band_offset(L + 1).
//   mmax = 1: band_size = 3 D - 2 (L = 3: 46 numbers instead of 256 for the dense blocks).
//
// Band rows ("rows" below) and the packed-by-m order
//   The band has K = sum_l (2 k(l) + 1) rows. The edge_frame_pack output, the SO(2) blocks and
//   the unrotate input all use one packed order of these rows (doc/model.md step 3b):
//       block m = 0 : (l, 0)  for l = 0..L                 -> L+1 rows
//       block m > 0 : (l, +m) for l = m..L, then (l, -m) for l = m..L   -> 2 (L+1-m) rows
//   blocks m = 0, 1, .., mmax one after the other. packed_row(l, m) gives the position.
//   The radial multiplier g_e has one entry per (block m, l, input channel), m outer, then l,
//   then channel; gate_row(l, |m|) = sum_{m'' < |m|} (L+1-m'') + (l - |m|) is its row, and the
//   +m and -m members of a pair share it.
//
// Derivation of the band (no dense D is ever formed)
//   Notation: S_l^m(w) = |w|^l Y_l^m(w/|w|) is the solid harmonic, a homogeneous harmonic
//   polynomial of degree l. Frame of edge e (doc/model.md "Edge frame"): R_e has rows
//   (e1, e2, n), so R^T u = u_x e1 + u_y e2 + u_z n.
//   (i)  From Y(R v) = D(R) Y(v) with R -> R^T and D(R^T) = D(R)^T (D is orthogonal):
//            S_l^{m'}(R^T u) = sum_m D^l_{m m'}(R) S_l^m(u)            for all u.
//        So row m of D^l is the coefficient of S_l^m in f(u) := S_l^{m'}(R^T u).
//   (ii) Write S_l^{m}, m >= 0, as sqrt2 N_lm C_m(x, y) Pi_l^m(z, r^2) and S_l^{-m} with S_m
//        in place of C_m (S_l^0 = N_l0 Pi_l^0), where C_m + i S_m = (x + i y)^m and
//        Pi_l^m = r^{l-m} P_l^{(m)}(z / r) (m-th derivative of the Legendre polynomial),
//        N_lm = sqrt((2l+1)/(4pi) (l-m)!/(l+m)!). This is doc/model.md's definition, because
//        P_l^m(cos t) = sin^m t P_l^{(m)}(cos t) and (x + i y)^m = (r sin t)^m e^{i m p}.
//   (iii) Derivatives of order < |m| in (x, y) of (x +- i y)^|m| times a function of (z, r^2)
//        vanish at the pole u = z_hat; Pi depends on x, y only through r^2, whose first
//        derivatives vanish there. Working through m = 0, +-1, +-2 at the pole (z = r = 1):
//            f(z_hat)                   = c_0  N_l0 P_l(1)               (P_l(1) = 1)
//            d_x f(z_hat)               = c_1  sqrt2 N_l1 P_l'(1)       (P_l'(1) = l(l+1)/2)
//            d_y f(z_hat)               = c_-1 sqrt2 N_l1 P_l'(1)
//            (d_xx - d_yy) f(z_hat)     = c_2  4 sqrt2 N_l2 P_l''(1)    (P_l''(1) = (l-1)l(l+1)(l+2)/8)
//            d_xy f(z_hat)              = c_-2 2 sqrt2 N_l2 P_l''(1)
//        (all other S_l^m contribute nothing to these derivatives at the pole).
//   (iv) The u-derivatives of f at z_hat are directional derivatives of S_l^{m'} at n along e1
//        and e2. Let F(s, t) = S_l^{m'}(n + s e1 + t e2) / N_l0 with Taylor coefficients
//        F = F0 + Fs s + Ft t + Fss s^2 + Ftt t^2 + Fst s t + ... Then, with
//        N_l1 / N_l0 = 1/sqrt(l(l+1)) and N_l2 / N_l0 = 1/sqrt(q_l), q_l = (l-1)l(l+1)(l+2):
//            D_{ 0 m'} = F0                       ( = sqrt(4pi/(2l+1)) Y_l^{m'}(n) )
//            D_{+1 m'} = sqrt(2/(l(l+1))) Fs      D_{-1 m'} = sqrt(2/(l(l+1))) Ft
//            D_{+2 m'} = 2 sqrt2/sqrt(q_l) (Fss - Ftt)     D_{-2 m'} = 2 sqrt2/sqrt(q_l) Fst
//   (v)  F is evaluated exactly as a truncated bivariate polynomial ("jet", jet.hpp) by running
//        the recursions for C_m, S_m and Pi_l^m on jets of x = n_x + e1_x s + e2_x t (same for
//        y, z) and r^2 = |n + s e1 + t e2|^2 = 1 + s^2 + t^2 (n, e1, e2 orthonormal):
//            C_{m+1} = x C_m - y S_m,  S_{m+1} = x S_m + y C_m,
//            Pi_m^m = (2m-1)!!, Pi_{m+1}^m = (2m+1) z Pi_m^m,
//            (l-m) Pi_l^m = (2l-1) z Pi_{l-1}^m - (l+m-1) r^2 Pi_{l-2}^m.
//        The derivative of the band with respect to the edge vector is the same computation in
//        forward mode: each jet coefficient also carries d/dr_k (k = x, y, z), seeded with
//        dn/dr, de1/dr, de2/dr; r^2's jet stays 1 + s^2 + t^2 because the frame stays
//        orthonormal under every perturbation of r.
//   Every formula is checked in tests/unit/test_wigner_band.cpp against a dense D built by least
//   squares from Y(R v_k) = D Y(v_k), and the derivative against central differences.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

namespace edgeframe::kk {

// Largest degree the kernels are compiled for; sizes of per-thread scratch arrays follow it.
inline constexpr int kMaxL = 8;

KOKKOS_INLINE_FUNCTION constexpr int coeff_index(int l, int m) { return l * l + l + m; }
KOKKOS_INLINE_FUNCTION constexpr int n_coeffs(int lmax) { return (lmax + 1) * (lmax + 1); }
KOKKOS_INLINE_FUNCTION constexpr int band_k(int l, int mmax) { return l < mmax ? l : mmax; }

KOKKOS_INLINE_FUNCTION constexpr int band_offset(int l, int mmax) {
  int off = 0;
  for (int lp = 0; lp < l; ++lp) off += (2 * band_k(lp, mmax) + 1) * (2 * lp + 1);
  return off;
}
KOKKOS_INLINE_FUNCTION constexpr int band_size(int lmax, int mmax) { return band_offset(lmax + 1, mmax); }
// Index of D^l_{m m'} inside one edge's band (|m| <= band_k(l, mmax), |m'| <= l).
KOKKOS_INLINE_FUNCTION constexpr int band_index(int l, int m, int mp, int mmax) {
  return band_offset(l, mmax) + (m + band_k(l, mmax)) * (2 * l + 1) + (mp + l);
}

// One element of a node-feature array [N, D, C] from its flat index i = (a D + row) C + c, with
// the row's degree l and order m' (row = coeff_index(l, m')): the per-element loop orders.
struct NodeElement {
  int a, row, l, mp, c;
};
KOKKOS_INLINE_FUNCTION NodeElement node_element(std::int64_t i, int lmax, int channels) {
  const int D = n_coeffs(lmax);
  NodeElement x{};
  x.c = int(i % channels);
  x.row = int((i / channels) % D);
  x.a = int(i / (std::int64_t(channels) * D));
  while ((x.l + 1) * (x.l + 1) <= x.row) ++x.l;
  x.mp = x.row - x.l * x.l - x.l;
  return x;
}
// One work item of the device form's node passes from its flat index
// i = ((a (lmax + 1) + l) split + s) blocks + cb, cb the block of channels and s the part of the
// node's edge list (kernel_common.hpp launch_device_node_pass; split 1: s = 0). The lanes of a
// warp share a, l and s when blocks is a multiple of 32.
struct DegreeElement {
  int a, l, cb, s;
};
KOKKOS_INLINE_FUNCTION DegreeElement degree_element(std::int64_t i, int lmax, int blocks, int split = 1) {
  const std::int64_t als = i / blocks, al = als / split;
  return {int(al / (lmax + 1)), int(al % (lmax + 1)), int(i % blocks), int(als % split)};
}
// Number of band rows K = sum_l (2 k(l) + 1).
KOKKOS_INLINE_FUNCTION constexpr int band_rows(int lmax, int mmax) {
  int k = 0;
  for (int l = 0; l <= lmax; ++l) k += 2 * band_k(l, mmax) + 1;
  return k;
}
// First packed row of block m (m = 0..mmax); block m > 0 holds 2 (L+1-m) rows.
KOKKOS_INLINE_FUNCTION constexpr int packed_block_start(int m, int lmax) {
  int start = 0;
  for (int mm = 0; mm < m; ++mm) start += (mm == 0 ? 1 : 2) * (lmax + 1 - mm);
  return start;
}
// Packed row of coefficient (l, m), |m| <= min(l, mmax).
KOKKOS_INLINE_FUNCTION constexpr int packed_row(int l, int m, int lmax) {
  const int am = m < 0 ? -m : m;
  const int start = packed_block_start(am, lmax);
  if (am == 0) return start + l;
  return start + (m > 0 ? 0 : lmax + 1 - am) + (l - am);
}
// Row of the radial multiplier shared by (l, +m) and (l, -m).
KOKKOS_INLINE_FUNCTION constexpr int gate_row(int l, int m, int lmax) {
  const int am = m < 0 ? -m : m;
  int start = 0;
  for (int mm = 0; mm < am; ++mm) start += lmax + 1 - mm;
  return start + (l - am);
}
// Rows of the radial multiplier: sum_{m=0..min(lmax, mmax)} (L+1-m) (a part of the band rows
// may have mmax > lmax: degree 0 alone, src/engine/ops.hpp BandPart).
KOKKOS_INLINE_FUNCTION constexpr int gate_rows(int lmax, int mmax) {
  int g = 0;
  for (int m = 0; m <= mmax && m <= lmax; ++m) g += lmax + 1 - m;
  return g;
}

static_assert(band_size(3, 1) == 3 * 16 - 2, "mmax 1 band is 3D - 2");
static_assert(band_size(2, 1) == 3 * 9 - 2, "mmax 1 band is 3D - 2");
static_assert(band_rows(3, 1) == 10 && band_rows(3, 2) == 14, "K rows");
static_assert(packed_row(3, -1, 3) == 9 && packed_row(2, 2, 3) == 10 && packed_row(3, -2, 3) == 13,
              "packed order: block 0, (+1 rows, -1 rows), (+2 rows, -2 rows)");
static_assert(gate_rows(3, 2) == 9 && gate_row(2, -2, 3) == 7, "gate rows: block m outer, then l");
static_assert(gate_rows(0, 2) == 1 && band_rows(0, 2) == 1 && band_size(0, 2) == 1, "degree 0 alone: one row");

}  // namespace edgeframe::kk
