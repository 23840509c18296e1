"""Real spherical harmonics (doc/model.md conventions) and a dense Wigner D for tests.

Conventions (doc/model.md, "Indices and spherical harmonics"):
  * coefficient (l, m), m = -l..l, sits at index l*l + l + m;
  * real, orthonormal on the unit sphere, polar axis z, no Condon-Shortley phase:
      Y_l^m  = sqrt(2) N_lm P_l^m(cos t) cos(m p)      (m > 0)
      Y_l^0  =         N_l0 P_l(cos t)
      Y_l^-m = sqrt(2) N_lm P_l^m(cos t) sin(m p)      (m > 0)
    N_lm = sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!), P_l^m without (-1)^m.
    So Y_1 = sqrt(3/(4 pi)) (y, z, x).

Evaluation is Cartesian and has no polar singularity. With r^2 = x^2 + y^2 + z^2,

    r^l P_l^m(cos t) e^{i m p} = Pi_l^m(z, r^2) (x + i y)^m

where Pi_l^m is a polynomial in z and r^2 obeying the associated-Legendre recursion
(P_l^m = sin^m t * P_l^(m)(cos t), then multiply by r^(l-m)):

    Pi_m^m     = (2m-1)!!
    Pi_{m+1}^m = (2m+1) z Pi_m^m
    Pi_l^m     = ((2l-1) z Pi_{l-1}^m - (l+m-1) r^2 Pi_{l-2}^m) / (l-m)

The solid harmonic S_l^m(w) = |w|^l Y_l^m(w/|w|) is then
    S_l^m  = sqrt(2) N_lm Pi_l^m Re(x+iy)^m,  S_l^-m = sqrt(2) N_lm Pi_l^m Im(x+iy)^m,
    S_l^0  = N_l0 Pi_l^0.

The recursion only multiplies polynomials, so it runs unchanged on *jets* (truncated Taylor
expansions, see `Jet`): that is how band.py gets the derivatives of S along the edge frame's
transverse axes without ever forming a dense D.
"""

import math

import numpy as np
import torch


def num_coeffs(lmax):
    """D = (L+1)^2 coefficients for degrees 0..L."""
    return (lmax + 1) ** 2


def norm_lm(l, m):
    """N_lm = sqrt((2l+1)/(4 pi) (l-m)!/(l+m)!), float64 Python scalar, m >= 0."""
    return math.sqrt((2 * l + 1) / (4.0 * math.pi) * math.factorial(l - m) / math.factorial(l + m))


def double_factorial(n):
    """n!! for odd n >= -1 ((-1)!! = 1)."""
    out = 1
    while n > 1:
        out *= n
        n -= 2
    return out


class Jet:
    """Second-order jet of a function f at a point n, along two directions e1, e2.

    Components (last tensor axis, size `order_size(order)`):
        order 0: [f]
        order 1: [f, d1 f, d2 f]
        order 2: [f, d1 f, d2 f, d11 f, d22 f, d12 f]
    where d1 = e1 . grad, d2 = e2 . grad. Products follow Leibniz's rule; sums are linear.
    """

    def __init__(self, v, order):
        self.v = v
        self.order = order

    @staticmethod
    def order_size(order):
        return (1, 3, 6)[order]

    def __add__(self, other):
        return Jet(self.v + other.v, self.order)

    def __sub__(self, other):
        return Jet(self.v - other.v, self.order)

    def scale(self, c):
        return Jet(self.v * c, self.order)

    def __mul__(self, other):
        f, g = self.v, other.v
        out = [f[..., 0] * g[..., 0]]
        if self.order >= 1:
            out.append(f[..., 1] * g[..., 0] + f[..., 0] * g[..., 1])
            out.append(f[..., 2] * g[..., 0] + f[..., 0] * g[..., 2])
        if self.order >= 2:
            out.append(f[..., 3] * g[..., 0] + 2 * f[..., 1] * g[..., 1] + f[..., 0] * g[..., 3])
            out.append(f[..., 4] * g[..., 0] + 2 * f[..., 2] * g[..., 2] + f[..., 0] * g[..., 4])
            out.append(f[..., 5] * g[..., 0] + f[..., 1] * g[..., 2] + f[..., 2] * g[..., 1]
                       + f[..., 0] * g[..., 5])
        return Jet(torch.stack(out, dim=-1), self.order)


def solid_harmonics_jets(x, y, z, r2, lmax):
    """Solid harmonics S_l^m as jets. x, y, z, r2: Jet objects of the same order and shape.

    Returns a list over l of lists over m = -l..l of Jet.
    """
    # A_m + i B_m = (x + i y)^m
    one = Jet(torch.zeros_like(x.v), x.order)
    one.v[..., 0] = 1.0
    re_pow, im_pow = [one], [Jet(torch.zeros_like(x.v), x.order)]
    for m in range(1, lmax + 1):
        a, b = re_pow[-1], im_pow[-1]
        re_pow.append(a * x - b * y)
        im_pow.append(a * y + b * x)
    out = [[None] * (2 * l + 1) for l in range(lmax + 1)]
    for m in range(lmax + 1):
        # vertical recursion for Pi_l^m, l = m..L
        pis = {m: one.scale(float(double_factorial(2 * m - 1)))}
        if m + 1 <= lmax:
            pis[m + 1] = (z * pis[m]).scale(float(2 * m + 1))
        for l in range(m + 2, lmax + 1):
            pis[l] = ((z * pis[l - 1]).scale(float(2 * l - 1))
                      - (r2 * pis[l - 2]).scale(float(l + m - 1))).scale(1.0 / (l - m))
        for l in range(m, lmax + 1):
            if m == 0:
                out[l][l] = pis[l].scale(norm_lm(l, 0))
            else:
                c = math.sqrt(2.0) * norm_lm(l, m)
                out[l][l + m] = (pis[l] * re_pow[m]).scale(c)
                out[l][l - m] = (pis[l] * im_pow[m]).scale(c)
    return out


def real_sph_harm(vec, lmax):
    """Y_lm(vec/|vec|) for vec [..., 3] -> [..., (L+1)^2] (index l*l + l + m)."""
    n = vec / torch.linalg.norm(vec, dim=-1, keepdim=True)
    x, y, z = (Jet(n[..., k:k + 1], 0) for k in range(3))
    r2 = Jet(torch.ones_like(n[..., :1]), 0)
    s = solid_harmonics_jets(x, y, z, r2, lmax)
    return torch.cat([s[l][k].v for l in range(lmax + 1) for k in range(2 * l + 1)], dim=-1)


def sphere_quadrature(degree, dtype=torch.float64):
    """Points and weights on the unit sphere, exact for polynomials of total degree <= degree.

    Gauss-Legendre in cos(t) times a uniform grid in p.
    """
    n_t = degree // 2 + 1
    n_p = degree + 1
    ct, wt = np.polynomial.legendre.leggauss(n_t)
    p = 2.0 * np.pi * np.arange(n_p) / n_p
    st = np.sqrt(1.0 - ct ** 2)
    pts = np.stack([np.outer(st, np.cos(p)), np.outer(st, np.sin(p)),
                    np.outer(ct, np.ones(n_p))], axis=-1).reshape(-1, 3)
    w = np.outer(wt, np.full(n_p, 2.0 * np.pi / n_p)).reshape(-1)
    return torch.tensor(pts, dtype=dtype), torch.tensor(w, dtype=dtype)


def dense_wigner_d(rot, lmax):
    """Dense real Wigner D blocks for rotation matrices rot [..., 3, 3]. TESTS ONLY.

    D^l_{mm'}(R) = integral over the sphere of Y_lm(R v) Y_lm'(v) dv, which by orthonormality
    is the unique matrix with Y_l(R v) = D^l(R) Y_l(v). The integrand has degree 2l, so the
    quadrature of `sphere_quadrature(2L)` is exact. Returns a list over l of [..., 2l+1, 2l+1].
    """
    pts, w = sphere_quadrature(2 * lmax, dtype=rot.dtype)
    pts, w = pts.to(rot.device), w.to(rot.device)
    y = real_sph_harm(pts, lmax)                                  # [K, D]
    rp = torch.einsum("...ab,kb->...ka", rot, pts)                # [..., K, 3] = R v_k
    yr = real_sph_harm(rp, lmax)                                  # [..., K, D]
    out = []
    for l in range(lmax + 1):
        s = slice(l * l, (l + 1) ** 2)
        out.append(torch.einsum("...km,kn,k->...mn", yr[..., s], y[:, s], w))
    return out


def block_diag_d(blocks):
    """List over l of [..., 2l+1, 2l+1] -> [..., D, D] block diagonal."""
    lmax = len(blocks) - 1
    d = num_coeffs(lmax)
    shape = blocks[0].shape[:-2]
    out = blocks[0].new_zeros(*shape, d, d)
    for l, b in enumerate(blocks):
        s = slice(l * l, (l + 1) ** 2)
        out[..., s, s] = b
    return out
