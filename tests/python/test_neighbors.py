"""Vectorised neighbour search against a plain loop, periodic (triclinic, small cells, unwrapped
positions, mixed pbc) and open."""

import itertools

import numpy as np
import torch
import pytest

from edgeframe_ref.neighbors import neighbor_list
from edgeframe_ref.structures import axis_cluster, bcc, diamond, rattle, triclinic_two_species


def loop_reference(pos, cell, pbc, r_cut, reach=4):
    out = []
    rng = [range(-reach, reach + 1) if p else range(1) for p in pbc]
    for i in range(len(pos)):
        for j in range(len(pos)):
            for s in itertools.product(*rng):
                if i == j and s == (0, 0, 0):
                    continue
                d = pos[j] + np.array(s, dtype=np.float64) @ cell - pos[i]
                if np.dot(d, d) < r_cut * r_cut:
                    out.append((i, j) + tuple(s))
    return sorted(out)


def as_tuples(edges):
    i, j, s = edges
    return [(int(a), int(b)) + tuple(int(x) for x in c) for a, b, c in zip(i, j, s)]


CASES = {
    "triclinic": (triclinic_two_species(), 3.5),
    "triclinic_big_cutoff": (triclinic_two_species(), 7.0),   # r_cut > cell: several images
    "diamond_rattled": (rattle(diamond((1, 1, 1)), 0.1, 1), 4.0),
    "bcc": (bcc((2, 2, 2)), 3.0),
    "cluster": (axis_cluster(), 3.5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_loop(name):
    atoms, r_cut = CASES[name]
    got = as_tuples(neighbor_list(atoms.positions, atoms.cell, atoms.pbc, r_cut))
    assert got == sorted(got), "edges must be sorted by (i, j, shift)"
    assert got == loop_reference(atoms.positions, atoms.cell, atoms.pbc, r_cut)


def test_unwrapped_positions_and_mixed_pbc():
    atoms = triclinic_two_species()
    pos = atoms.positions + np.array([[2, -1, 0]]) @ atoms.cell   # outside the cell
    pos[3] += atoms.cell[2] * 3
    for pbc in [(True, True, True), (True, False, True), (False, False, True)]:
        got = as_tuples(neighbor_list(pos, atoms.cell, pbc, 4.0))
        assert got == loop_reference(pos, atoms.cell, pbc, 4.0, reach=5)


def test_both_directions_and_symmetry():
    atoms = rattle(diamond((1, 1, 1)), 0.05, 2)
    got = set(as_tuples(neighbor_list(atoms.positions, atoms.cell, atoms.pbc, 3.9)))
    for i, j, a, b, c in got:
        assert (j, i, -a, -b, -c) in got


def binned_cases():
    """Periodic boxes with >= 3 bins per direction: cubic, bcc, a sheared (triclinic) cell over
    the same atoms, and positions outside the cell."""
    cubic = rattle(diamond((4, 4, 4)), 0.1, 3)
    sheared = cubic.cell.copy()
    sheared[1, 0] += 3.0
    sheared[2, 0] -= 2.0
    sheared[2, 1] += 1.5
    outside = cubic.positions + np.array([[1, -2, 0]]) @ cubic.cell
    outside[5] += cubic.cell[2] * 3
    return {
        "diamond": (cubic.positions, cubic.cell, 3.5),
        "bcc": (rattle(bcc((6, 6, 6)), 0.05, 4).positions, bcc((6, 6, 6)).cell, 5.5),
        "sheared": (cubic.positions, sheared, 3.5),
        "outside": (outside, cubic.cell, 4.6),
    }


@pytest.mark.parametrize("name", ["diamond", "bcc", "sheared", "outside"])
def test_binned_search_gives_the_all_pairs_edges(name):
    """neighbor_list_binned (large boxes) against the all-pairs search: the same edges, the
    same order, shifts included."""
    from edgeframe_ref.neighbors import bin_counts, neighbor_list_binned
    pos, cell, r_cut = binned_cases()[name]
    assert min(bin_counts(cell, r_cut)) >= 3
    assert len(pos) < 2048   # neighbor_list itself takes the all-pairs path here
    want = neighbor_list(pos, cell, (True, True, True), r_cut)
    got = neighbor_list_binned(pos, cell, r_cut)
    assert len(want[0]) > 20 * len(pos)
    for a, b in zip(got, want):
        assert torch.equal(a, b)


def test_large_boxes_take_the_binned_search_and_small_cells_refuse_it():
    from edgeframe_ref import neighbors
    atoms = rattle(diamond((8, 8, 8)), 0.05, 5)     # 4096 atoms
    got = neighbors.neighbor_list(atoms.positions, atoms.cell, atoms.pbc, 3.5)
    direct = neighbors.neighbor_list_binned(atoms.positions, atoms.cell, 3.5)
    for a, b in zip(got, direct):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="bins per direction"):
        neighbors.neighbor_list_binned(atoms.positions, atoms.cell, 12.0)
