"""Phonons by finite displacements, in numpy: force constants from a supercell, the dynamical
matrix of the primitive cell, dispersion along a path.

Conventions. Force constants Phi[k, a, j, b] = -dF_{j b} / du_{k a} (eV/A^2), k: the displaced
atom of primitive-basis site k (an atom of the supercell), j: every atom of the supercell, by
central differences of +-h displacements. Dynamical matrix of the primitive cell, [3 nb, 3 nb]:
    D_{k a, k' b}(q) = sum_{j on site k'} Phi[k, a, j, b] w_j(q) / sqrt(m_k m_k'),
    w_j(q) = mean over the shortest supercell images r of r_j - r_k of exp(i q . r)
(atoms at equal distance through several images share the weight, as phonopy does). Its
eigenvalues lambda (eV / (A^2 amu)) give frequencies f = sqrt(lambda) * THZ_PER_UNIT;
a negative lambda is reported as a negative frequency (an instability or numerical noise).
q is Cartesian, 1/A (including the 2 pi).
"""
import itertools

import numpy as np

# sqrt(eV / (A^2 amu)) / (2 pi) in THz: sqrt(1.602176634e-19 / (1e-20 * 1.66053906660e-27)) / 2 pi
THZ_PER_UNIT = float(np.sqrt(1.602176634e-19 / (1e-20 * 1.66053906660e-27)) / (2 * np.pi) / 1e12)
IMAGE_TOL = 1e-4   # A: images of one pair whose lengths differ by less count as equidistant


def displaced_configs(pos, sites, h):
    """[(site index k, axis a, sign s, positions)] for +-h along x, y, z of each site's atom."""
    out = []
    for k, i in enumerate(sites):
        for a in range(3):
            for s in (+1, -1):
                p = pos.copy()
                p[i, a] += s * h
                out.append((k, a, s, p))
    return out


def force_constants(forces, sites, h):
    """forces: list of [N, 3] arrays in the order of displaced_configs -> Phi [nb, 3, N, 3]."""
    nb = len(sites)
    n = forces[0].shape[0]
    phi = np.zeros((nb, 3, n, 3))
    it = iter(forces)
    for k in range(nb):
        for a in range(3):
            fp, fm = next(it), next(it)
            phi[k, a] = -(np.asarray(fp) - np.asarray(fm)) / (2 * h)
    return phi


def image_vectors(pos, cell, i):
    """For every atom j: the shortest vectors r_j - r_i over supercell images, [N, m, 3] padded
    with zeros, a mask [N, m] of the real ones, and their counts [N]."""
    d = pos - pos[i]
    frac = d @ np.linalg.inv(cell)
    d = (frac - np.round(frac)) @ cell
    shifts = np.array(list(itertools.product((-1, 0, 1), repeat=3)), dtype=np.float64) @ cell
    cand = d[:, None, :] + shifts[None]                        # [N, 27, 3]
    length = np.sqrt((cand ** 2).sum(-1))
    best = length.min(1, keepdims=True)
    keep = length < best + IMAGE_TOL
    m = keep.sum(1)
    vecs = np.zeros((len(pos), m.max(), 3))
    mask = np.zeros((len(pos), m.max()))
    for j in range(len(pos)):
        vecs[j, :m[j]] = cand[j, keep[j]]
        mask[j, :m[j]] = 1.0
    return vecs, mask, m


class Dynamical:
    """Dynamical matrices from force constants Phi [nb, 3, N, 3] of a supercell.

    pos [N, 3], cell [3, 3] rows (the supercell), sites: the nb displaced atoms, one per
    primitive-basis site, site_of [N]: the basis site of every atom, masses [nb] amu."""

    def __init__(self, phi, pos, cell, sites, site_of, masses):
        self.phi, self.site_of = phi, np.asarray(site_of)
        self.masses = np.asarray(masses, dtype=np.float64)
        self.nb = len(sites)
        self.images = [image_vectors(pos, cell, i) for i in sites]

    def matrix(self, q):
        nb = self.nb
        D = np.zeros((3 * nb, 3 * nb), dtype=complex)
        for k in range(nb):
            vecs, mask, m = self.images[k]
            w = (np.exp(1j * (vecs @ q)) * mask).sum(1) / m
            for kp in range(nb):
                sel = self.site_of == kp
                block = np.einsum("ajb,j->ab", self.phi[k][:, sel, :], w[sel])
                D[3 * k:3 * k + 3, 3 * kp:3 * kp + 3] = block / np.sqrt(self.masses[k] *
                                                                         self.masses[kp])
        return (D + D.conj().T) / 2

    def frequencies(self, q):
        """Sorted frequencies at q (THz); negative where the eigenvalue is negative."""
        lam = np.linalg.eigvalsh(self.matrix(np.asarray(q, dtype=np.float64)))
        return np.sign(lam) * np.sqrt(np.abs(lam)) * THZ_PER_UNIT


def fcc_path(a, points_per_segment):
    """Gamma-X-K-Gamma-L for the fcc Bravais lattice (diamond, fcc), cubic constant a.
    X-K-Gamma runs along [110] from X' = (1, 1, 0) 2 pi / a, which is equivalent to X
    (X' - (1, 1, 1) 2 pi / a = (0, 0, -1) 2 pi / a). points_per_segment: points per 2 pi / a.
    Returns qs [M, 3] (1/A), the path coordinate x [M] (1/A), labels [(x, name)]."""
    u = 2 * np.pi / a
    segs = [((0, 0, 0), (1, 0, 0)), ((1, 1, 0), (.75, .75, 0)), ((.75, .75, 0), (0, 0, 0)),
            ((0, 0, 0), (.5, .5, .5))]
    names = ["G", "X", "K", "G", "L"]
    qs, xs, labels, x0 = [], [], [(0.0, "G")], 0.0
    for s, (q0, q1) in enumerate(segs):
        q0, q1 = np.array(q0, float) * u, np.array(q1, float) * u
        length = np.linalg.norm(q1 - q0)
        npts = max(2, int(round(points_per_segment * length / u)) + 1)
        t = np.linspace(0, 1, npts)
        qs.append(q0 + t[:, None] * (q1 - q0))
        xs.append(x0 + t * length)
        x0 += length
        labels.append((x0, names[s + 1]))
    return np.vstack(qs), np.concatenate(xs), labels


def segment(qs, q_from, q_to, a):
    """Indices of the path points on the straight segment q_from -> q_to (units 2 pi / a), in
    path order."""
    u = 2 * np.pi / a
    p0, p1 = np.asarray(q_from, float) * u, np.asarray(q_to, float) * u
    d = p1 - p0
    t = (qs - p0) @ d / (d @ d)
    off = np.linalg.norm(qs - p0 - t[:, None] * d, axis=1)
    on = np.where((off < 1e-9) & (t > -1e-9) & (t < 1 + 1e-9))[0]
    # the first contiguous run: the path may pass through q_from again later (Gamma)
    run = np.split(on, np.where(np.diff(on) != 1)[0] + 1)
    return next(r for r in run if len(r) > 1)
