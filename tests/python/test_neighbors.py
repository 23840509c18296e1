"""Vectorised neighbour search against a plain loop, periodic (triclinic, small cells, unwrapped
positions, mixed pbc) and open."""

import itertools

import numpy as np
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
