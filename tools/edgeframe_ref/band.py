"""Edge frame (two-chart roll rule) and the banded Wigner D, built directly.

Edge frame (doc/model.md): n = r/|r|; helper a = y_hat if |n_y| <= 0.9 else x_hat;
e1 = normalize(a - (a.n) n), e2 = n x e1; R_e has rows (e1, e2, n), so R_e n = z_hat.

Band layout: for l = 0..L, rows m = -k..k (k = min(l, mmax)) of D^l(R_e), each with its 2l+1
columns m' = -l..l; l outer, then m, then m'. Size sum_l (2k+1)(2l+1) (mmax 1: 3D - 2).

Derivation of the rows (no dense D is ever formed)
--------------------------------------------------
Row m of D^l(R) is the coefficient vector, in the basis Y_l^{m'}(v), of the function
v -> Y_l^m(R v) (because Y_l(R v) = D^l(R) Y_l(v)). With R rows (e1, e2, n) the frame
coordinates of v are x' = e1.v, y' = e2.v, z' = n.v, and from the definitions in sph.py

    Y_l^0(Rv)  = N_l0 P_l(z')
    Y_l^1(Rv)  = sqrt2 N_l1 P_l'(z') x'            Y_l^-1(Rv) = sqrt2 N_l1 P_l'(z') y'
    Y_l^2(Rv)  = sqrt2 N_l2 P_l''(z') (x'^2-y'^2)  Y_l^-2(Rv) = sqrt2 N_l2 P_l''(z') 2 x'y'

(using P_l^m(cos t) = sin^m t P_l^(m)(cos t) and x' + i y' = sin t e^{ip}).

For a fixed unit v let H(w) = |w|^l P_l(w.v/|w|) = (4 pi/(2l+1)) sum_m' S_l^m'(w) Y_l^m'(v)
(addition theorem, S = solid harmonic, a harmonic polynomial in w). Expand H at w = n along
the orthonormal pair e1, e2 (both perpendicular to n): with w = n + s e1 + t e2,
|w|^2 = 1 + s^2 + t^2 and w.v = z' + s x' + t y', so to second order

    H = P_l + s P_l' x' + t P_l' y'
        + s^2/2 (l P_l - z' P_l' + P_l'' x'^2) + t^2/2 (l P_l - z' P_l' + P_l'' y'^2)
        + s t P_l'' x' y'                                          (all P_l at z')

Hence d1 H = P_l' x', d2 H = P_l' y', (d11 - d22) H = P_l'' (x'^2 - y'^2), d12 H = P_l'' x'y',
and reading off the coefficients of Y_l^m'(v), with c_l = 4 pi/(2l+1):

    D_{ 0,m'} = c_l N_l0 S_lm'(n)              (= sqrt(4 pi/(2l+1)) Y_lm'(n))
    D_{+1,m'} = c_l sqrt2 N_l1 d1 S_lm'(n)
    D_{-1,m'} = c_l sqrt2 N_l1 d2 S_lm'(n)
    D_{+2,m'} = c_l sqrt2 N_l2 (d11 - d22) S_lm'(n)
    D_{-2,m'} = c_l sqrt2 N_l2 2 d12 S_lm'(n)

where d1 = e1.grad_w, d2 = e2.grad_w act on the polynomial S_lm'(w). The derivatives are
computed exactly by running the solid-harmonic recursion of sph.py on jets of x, y, z, r^2
at n along (e1, e2): x -> (n_x, e1_x, e2_x, 0, 0, 0), and r^2 -> (1, 0, 0, 2, 2, 0) because
|n| = 1, n.e1 = n.e2 = 0, |e1| = |e2| = 1, e1.e2 = 0. Only jet order mmax is carried.
The formulas are proved by tests against sph.dense_wigner_d.
"""

import math

import torch

from .sph import Jet, norm_lm, solid_harmonics_jets

CHART_THRESHOLD = 0.9  # |n_y| above this uses helper x_hat (chart 2)


def band_layout(lmax, mmax):
    """[(l, k, offset, rows, cols)] for each degree; k = min(l, mmax), rows = 2k+1."""
    out, off = [], 0
    for l in range(lmax + 1):
        k = min(l, mmax)
        rows, cols = 2 * k + 1, 2 * l + 1
        out.append((l, k, off, rows, cols))
        off += rows * cols
    return out


def band_size(lmax, mmax):
    l, k, off, rows, cols = band_layout(lmax, mmax)[-1]
    return off + rows * cols


def edge_frame(vec, roll=None):
    """Frame of each edge. vec [E, 3] -> (e1, e2, n, chart2) with chart2 a bool [E].

    roll: optional [E] angles (radians); rotates the frame about n (tests only):
    e1' = cos(a) e1 + sin(a) e2, e2' = -sin(a) e1 + cos(a) e2 (still e2' = n x e1').
    """
    n = vec / torch.linalg.norm(vec, dim=-1, keepdim=True)
    chart2 = n[:, 1].abs() > CHART_THRESHOLD
    helper = torch.zeros_like(n)
    helper[:, 0] = chart2.to(n.dtype)
    helper[:, 1] = (~chart2).to(n.dtype)
    e1 = helper - (helper * n).sum(-1, keepdim=True) * n
    e1 = e1 / torch.linalg.norm(e1, dim=-1, keepdim=True)
    e2 = torch.linalg.cross(n, e1, dim=-1)
    if roll is not None:
        c, s = torch.cos(roll)[:, None], torch.sin(roll)[:, None]
        e1, e2 = c * e1 + s * e2, -s * e1 + c * e2
    return e1, e2, n, chart2


def frame_matrix(vec, roll=None):
    """R_e [E, 3, 3] with rows (e1, e2, n)."""
    e1, e2, n, _ = edge_frame(vec, roll)
    return torch.stack([e1, e2, n], dim=-2)


def wigner_band(vec, lmax, mmax, roll=None):
    """Banded Wigner D of every edge frame: vec [E, 3] -> [E, band_size(lmax, mmax)]."""
    if mmax not in (1, 2):
        raise ValueError(f"mmax must be 1 or 2, got {mmax}")
    e1, e2, n, _ = edge_frame(vec, roll)
    order = mmax
    size = Jet.order_size(order)

    def coord(k):
        parts = [n[:, k], e1[:, k], e2[:, k]] + [torch.zeros_like(n[:, k])] * (size - 3)
        return Jet(torch.stack(parts, dim=-1), order)

    r2v = torch.zeros(n.shape[0], size, dtype=n.dtype, device=n.device)
    r2v[:, 0] = 1.0
    if order == 2:
        r2v[:, 3] = 2.0
        r2v[:, 4] = 2.0
    s = solid_harmonics_jets(coord(0), coord(1), coord(2), Jet(r2v, order), lmax)

    pieces = []
    for l, k, _, _, _ in band_layout(lmax, mmax):
        jets = torch.stack([s[l][c].v for c in range(2 * l + 1)], dim=-2)   # [E, 2l+1, J]
        cl = 4.0 * math.pi / (2 * l + 1)
        rows = {0: cl * norm_lm(l, 0) * jets[..., 0]}
        if k >= 1:
            c1 = cl * math.sqrt(2.0) * norm_lm(l, 1)
            rows[1] = c1 * jets[..., 1]
            rows[-1] = c1 * jets[..., 2]
        if k >= 2:
            c2 = cl * math.sqrt(2.0) * norm_lm(l, 2)
            rows[2] = c2 * (jets[..., 3] - jets[..., 4])
            rows[-2] = c2 * 2.0 * jets[..., 5]
        pieces.append(torch.stack([rows[m] for m in range(-k, k + 1)], dim=-2).flatten(1))
    return torch.cat(pieces, dim=-1)


def band_blocks(band, lmax, mmax):
    """Split a band [E, B] into per-degree views [E, 2k+1, 2l+1]."""
    return [band[:, off:off + rows * cols].view(-1, rows, cols)
            for l, k, off, rows, cols in band_layout(lmax, mmax)]
