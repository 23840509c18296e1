"""Brute-force neighbour search (all pairs x all needed periodic images), vectorised.

Edge e = (i <- j, shift S): r_e = x_j + S @ cell - x_i with cell rows the lattice vectors
(Angstrom) and S an integer 3-vector; kept when 0 < |r_e| < r_cut (so an atom's own images
are edges too). Result sorted by (i, j, S0, S1, S2): CSR by receiver, deterministic.

Image range: with positions wrapped to fractional coordinates in [0, 1) along periodic
directions, |S_a + df_a| < r_cut / d_a with |df_a| < 1 and d_a = V / |b x c| (the spacing of
the lattice planes spanned by the two other vectors) gives |S_a| <= ceil(r_cut / d_a).
Shifts are then mapped back to the caller's (unwrapped) positions.

Large periodic boxes (neighbor_list_binned, chosen by neighbor_list from BINNED_FROM atoms on):
the all-pairs search is O(N^2) (a 32 000-atom diamond box did not finish in 10 minutes), so
atoms are binned by fractional coordinates into n_a >= 3 bins per direction, each at least
r_cut thick along its plane normal; an edge's two atoms then lie in the same or adjacent bins,
with the shift the bin index's wrap-around. Each candidate's distance is computed with the same
operations in the same order as the all-pairs search (x_j + S @ cell, then - x_i), so both
keep the same edges, and the result is sorted the same way.
"""

import itertools
import math

import numpy as np
import torch


def plane_spacings(cell):
    """Per direction a, d_a = V / |b x c|: the spacing of the lattice planes spanned by the two
    other cell vectors."""
    cell = np.asarray(cell, dtype=np.float64)
    vol = abs(np.linalg.det(cell))
    return [vol / np.linalg.norm(np.cross(cell[(a + 1) % 3], cell[(a + 2) % 3])) for a in range(3)]


def image_range(cell, pbc, r_cut):
    """Per direction, the largest |S_a| needed (0 for non-periodic directions)."""
    if not any(pbc):
        return [0, 0, 0]
    return [int(math.ceil(r_cut / d)) if p else 0 for d, p in zip(plane_spacings(cell), pbc)]


BINNED_FROM = 2048   # atoms: neighbor_list bins periodic boxes this large (when they allow it)


def bin_counts(cell, r_cut):
    """Per direction, how many bins at least r_cut thick fit (along the plane normal)."""
    # The margin keeps rounding off the bin edges.
    return [int(d // (r_cut * (1 + 1e-9))) for d in plane_spacings(cell)]


def _wrapped(positions, cell, pbc):
    """float64 positions wrapped into the cell along periodic directions, the wrap counts, the cell."""
    pos = torch.as_tensor(np.asarray(positions, dtype=np.float64))
    n_atoms = pos.shape[0]
    cell_t = torch.as_tensor(np.asarray(cell, dtype=np.float64)) if any(pbc) else \
        torch.eye(3, dtype=torch.float64)
    wrap = torch.zeros(n_atoms, 3, dtype=torch.int64)
    if any(pbc):
        frac = pos @ torch.linalg.inv(cell_t)
        for a in range(3):
            if pbc[a]:
                wrap[:, a] = torch.floor(frac[:, a]).to(torch.int64)
        pos = pos - wrap.to(pos.dtype) @ cell_t
    return pos, wrap, cell_t


def _sorted_edges(i, j, s, wrap, n_atoms):
    """Shifts back to the caller's positions (x_j' + S' cell - x_i' with x' = x - wrap @ cell),
    then sorted by (i, j, s0, s1, s2)."""
    s = s - wrap[j] + wrap[i]
    span = int(s.abs().max()) + 1 if s.numel() else 1
    base = 2 * span + 1
    key = ((i * n_atoms + j) * base + (s[:, 0] + span)) * base + (s[:, 1] + span)
    key = key * base + (s[:, 2] + span)
    order = torch.argsort(key, stable=True)
    return i[order], j[order], s[order]


def neighbor_list(positions, cell, pbc, r_cut, max_elements=4_000_000):
    """positions [N, 3], cell [3, 3] (rows), pbc 3 bools -> (i [E], j [E], shift [E, 3]) int64.

    Works in float64 on the CPU; receivers are handled in chunks so that one pass holds about
    `max_elements` candidate pairs (x 3 doubles). Periodic boxes of BINNED_FROM atoms or more
    with at least 3 bins per direction go through neighbor_list_binned (the same edges).
    """
    pbc = [bool(p) for p in pbc]
    n_atoms = len(positions)
    if n_atoms >= BINNED_FROM and all(pbc) and min(bin_counts(cell, r_cut)) >= 3:
        return neighbor_list_binned(positions, cell, r_cut)
    pos, wrap, cell_t = _wrapped(positions, cell, pbc)
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
    return _sorted_edges(torch.cat(out_i), torch.cat(out_j), torch.cat(out_s), wrap, n_atoms)


def neighbor_list_binned(positions, cell, r_cut):
    """neighbor_list for a box periodic in all three directions with at least 3 bins per
    direction (bin_counts): the same edges, in O(N) candidates instead of O(N^2)."""
    n = bin_counts(cell, r_cut)
    if min(n) < 3:
        raise ValueError(f"neighbor_list_binned: {n} bins per direction for r_cut {r_cut}; needs 3 or more")
    pos, wrap, cell_t = _wrapped(positions, cell, [True] * 3)
    n_atoms = pos.shape[0]
    n_t = torch.tensor(n, dtype=torch.int64)
    frac = (pos @ torch.linalg.inv(cell_t)).clamp(0.0, 1.0)
    b3 = torch.minimum(torch.floor(frac * n_t.to(frac.dtype)).to(torch.int64), n_t - 1)   # [N, 3]
    n_bins = n[0] * n[1] * n[2]
    bin_id = (b3[:, 0] * n[1] + b3[:, 1]) * n[2] + b3[:, 2]
    order = torch.argsort(bin_id, stable=True)
    counts = torch.bincount(bin_id, minlength=n_bins)
    starts = torch.cumsum(counts, 0) - counts
    width = int(counts.max()) if n_atoms else 1
    table = torch.full((n_bins, width), -1, dtype=torch.int64)               # atoms of each bin
    table[bin_id[order], torch.arange(n_atoms) - starts[bin_id[order]]] = order
    # The all-pairs search's 27 shifts, in its order, and their offsets computed as it does.
    shifts = torch.tensor(list(itertools.product(range(-1, 2), repeat=3)), dtype=torch.int64)
    offsets = shifts.to(pos.dtype) @ cell_t
    cells = torch.stack(torch.meshgrid(*[torch.arange(k) for k in n], indexing="ij"), -1).reshape(-1, 3)
    recv = table                                                              # [B, W]
    ri = recv.clamp(min=0)
    rc2 = r_cut * r_cut
    out_i, out_j, out_s = [], [], []
    for d in itertools.product(range(-1, 2), repeat=3):
        u = cells + torch.tensor(d, dtype=torch.int64)                       # unwrapped neighbour bin
        shift = torch.div(u, n_t, rounding_mode="floor")                     # -1, 0 or 1 per direction
        nb = u - shift * n_t
        k = ((shift[:, 0] + 1) * 3 + (shift[:, 1] + 1)) * 3 + (shift[:, 2] + 1)   # index into shifts
        send = table[(nb[:, 0] * n[1] + nb[:, 1]) * n[2] + nb[:, 2]]         # [B, W]
        sj = send.clamp(min=0)
        images = pos[sj] + offsets[k][:, None, :]                            # x_j + S @ cell
        dv = images[:, None, :, :] - pos[ri][:, :, None, :]                  # [B, W, W, 3]
        d2 = (dv * dv).sum(-1)
        keep = (recv[:, :, None] >= 0) & (send[:, None, :] >= 0) & (d2 < rc2) & (d2 > 0)
        zero = (shift == 0).all(dim=1)
        keep &= ~(zero[:, None, None] & (ri[:, :, None] == sj[:, None, :]))
        bb, a, c = keep.nonzero(as_tuple=True)
        out_i.append(ri[bb, a])
        out_j.append(sj[bb, c])
        out_s.append(shifts[k[bb]])
    return _sorted_edges(torch.cat(out_i), torch.cat(out_j), torch.cat(out_s), wrap, n_atoms)


def edge_vectors(positions, cell, i, j, shift):
    """r_e = x_j + S @ cell - x_i, same dtype/device as positions."""
    cell = torch.as_tensor(cell, dtype=positions.dtype, device=positions.device)
    return positions[j] - positions[i] + shift.to(positions.dtype) @ cell
