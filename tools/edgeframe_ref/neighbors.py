"""Brute-force neighbour search (all pairs x all needed periodic images), vectorised.

Edge e = (i <- j, shift S): r_e = x_j + S @ cell - x_i with cell rows the lattice vectors
(Angstrom) and S an integer 3-vector; kept when 0 < |r_e| < r_cut (so an atom's own images
are edges too). Result sorted by (i, j, S0, S1, S2): CSR by receiver, deterministic.

Image range: with positions wrapped to fractional coordinates in [0, 1) along periodic
directions, |S_a + df_a| < r_cut / d_a with |df_a| < 1 and d_a = V / |b x c| (the spacing of
the lattice planes spanned by the two other vectors) gives |S_a| <= ceil(r_cut / d_a).
Shifts are then mapped back to the caller's (unwrapped) positions.
"""

import itertools
import math

import numpy as np
import torch


def image_range(cell, pbc, r_cut):
    """Per direction, the largest |S_a| needed (0 for non-periodic directions)."""
    cell = np.asarray(cell, dtype=np.float64)
    out = []
    if any(pbc):
        vol = abs(np.linalg.det(cell))
    for a in range(3):
        if not pbc[a]:
            out.append(0)
            continue
        b, c = cell[(a + 1) % 3], cell[(a + 2) % 3]
        d = vol / np.linalg.norm(np.cross(b, c))
        out.append(int(math.ceil(r_cut / d)))
    return out


def neighbor_list(positions, cell, pbc, r_cut, max_elements=4_000_000):
    """positions [N, 3], cell [3, 3] (rows), pbc 3 bools -> (i [E], j [E], shift [E, 3]) int64.

    Works in float64 on the CPU; receivers are handled in chunks so that one pass holds about
    `max_elements` candidate pairs (x 3 doubles).
    """
    pos = torch.as_tensor(np.asarray(positions, dtype=np.float64))
    n_atoms = pos.shape[0]
    pbc = [bool(p) for p in pbc]
    cell_t = torch.as_tensor(np.asarray(cell, dtype=np.float64)) if any(pbc) else \
        torch.eye(3, dtype=torch.float64)
    wrap = torch.zeros(n_atoms, 3, dtype=torch.int64)
    if any(pbc):
        frac = pos @ torch.linalg.inv(cell_t)
        for a in range(3):
            if pbc[a]:
                wrap[:, a] = torch.floor(frac[:, a]).to(torch.int64)
        pos = pos - wrap.to(pos.dtype) @ cell_t
    ranges = image_range(cell_t.numpy(), pbc, r_cut)
    shifts = torch.tensor(list(itertools.product(*[range(-k, k + 1) for k in ranges])),
                          dtype=torch.int64)                       # [K, 3]
    offsets = shifts.to(pos.dtype) @ cell_t                        # [K, 3]
    # images of every sender: [K, N, 3]
    images = pos[None, :, :] + offsets[:, None, :]
    zero_shift = (shifts == 0).all(dim=1)                          # [K]
    rc2 = r_cut * r_cut
    chunk = max(1, max_elements // (shifts.shape[0] * max(n_atoms, 1)))
    out_i, out_j, out_s = [], [], []
    for start in range(0, n_atoms, chunk):
        stop = min(start + chunk, n_atoms)
        d = images[None, :, :, :] - pos[start:stop, None, None, :]   # [B, K, N, 3]
        d2 = (d * d).sum(-1)
        keep = (d2 < rc2)
        # exclude i == j without shift
        idx = torch.arange(start, stop)
        self_mask = torch.zeros_like(keep)
        self_mask[torch.arange(stop - start), :, idx] = zero_shift[None, :].expand(stop - start, -1)
        keep &= ~self_mask
        keep &= d2 > 0
        b, k, j = keep.nonzero(as_tuple=True)
        out_i.append(b + start)
        out_j.append(j)
        out_s.append(shifts[k])
    i = torch.cat(out_i)
    j = torch.cat(out_j)
    s = torch.cat(out_s)
    # back to the caller's positions: x_j' + S' cell - x_i' with x' = x - wrap @ cell
    s = s - wrap[j] + wrap[i]
    # sort by (i, j, s0, s1, s2)
    span = int(s.abs().max()) + 1 if s.numel() else 1
    base = 2 * span + 1
    key = ((i * n_atoms + j) * base + (s[:, 0] + span)) * base + (s[:, 1] + span)
    key = key * base + (s[:, 2] + span)
    order = torch.argsort(key, stable=True)
    return i[order], j[order], s[order]


def edge_vectors(positions, cell, i, j, shift):
    """r_e = x_j + S @ cell - x_i, same dtype/device as positions."""
    cell = torch.as_tensor(cell, dtype=positions.dtype, device=positions.device)
    return positions[j] - positions[i] + shift.to(positions.dtype) @ cell
