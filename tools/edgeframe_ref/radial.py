"""Radial basis and envelope (doc/model.md, forward pass step 2).

Envelope of order p, x = r / r_cut:
    u(x) = 1 - (p+1)(p+2)/2 x^p + p(p+2) x^(p+1) - p(p+1)/2 x^(p+2)     (x < 1), 0 otherwise.
u'(x) = -p(p+1)(p+2)/2 x^(p-1) (1 - x)^2, so u(1) = u'(1) = u''(1) = 0 (u''' does not vanish):
energy, forces and their first derivatives are continuous when an edge crosses r_cut.

Bessel basis: rbf_n(r) = sqrt(2/r_cut) sin(n pi r / r_cut) / r * u(r / r_cut), n = 1..n_rbf.
"""

import math

import torch


def envelope(x, p):
    """u(x) for x = r / r_cut, any shape; exactly 0 for x >= 1."""
    c0 = (p + 1) * (p + 2) / 2.0
    c1 = p * (p + 2.0)
    c2 = p * (p + 1) / 2.0
    xp = x ** p
    poly = 1.0 - c0 * xp + c1 * xp * x - c2 * xp * x * x
    return torch.where(x < 1.0, poly, torch.zeros_like(x))


def bessel_rbf(r, r_cut, n_rbf, p):
    """r [E] (Angstrom) -> (rbf [E, n_rbf], u [E]); rbf already includes the envelope u."""
    u = envelope(r / r_cut, p)
    n = torch.arange(1, n_rbf + 1, dtype=r.dtype, device=r.device)
    rbf = math.sqrt(2.0 / r_cut) * torch.sin(n * (math.pi / r_cut) * r[:, None]) / r[:, None]
    return rbf * u[:, None], u
