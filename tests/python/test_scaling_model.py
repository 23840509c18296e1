"""tools/scaling_model.py: its ghost geometry against a direct count of atoms around a rank's box
in a real lattice, and its check against the recorded two-GPU runs."""
import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import scaling_model as sm

ROOT = Path(__file__).resolve().parents[2]


def lattice_points(cells, a=3.567):
    """Diamond sites of cells[0] x cells[1] x cells[2] cubic cells."""
    basis = np.array([[0, 0, 0], [0, .5, .5], [.5, 0, .5], [.5, .5, 0],
                      [.25, .25, .25], [.25, .75, .75], [.75, .25, .75], [.75, .75, .25]])
    grid = np.array(list(itertools.product(*[range(c) for c in cells])), float)
    return ((grid[:, None, :] + basis[None]) .reshape(-1, 3)) * a


@pytest.mark.parametrize("grid", [(2, 1, 1), (2, 2, 1), (2, 2, 2)])
def test_ghost_counts_follow_a_direct_count_in_a_periodic_lattice(grid):
    # A 12^3-cell diamond box split into grid: for rank 0, count the periodic images of every atom
    # within r of its box (outside it), and those that belong to another rank. The continuum
    # shell must match both counts to the lattice's graininess (here within 20 %).
    cells, r = (12, 12, 12), 4.5
    side = np.array(cells) * 3.567
    x = lattice_points(cells)
    sub = side / np.array(grid)
    owner = tuple(np.floor(x / sub).astype(int).T)
    shifts = np.array(list(itertools.product([-1, 0, 1], repeat=3))) * side
    ghosts = cross = 0
    for s in shifts:
        y = x + s
        d = np.maximum(np.maximum(-y, y - sub), 0.0)          # distance outside rank 0's box per axis
        near = (np.linalg.norm(d, axis=1) <= r) & (d.max(axis=1) > 0)
        ghosts += int(near.sum())
        # Rank of the original atom; along a direction with one rank, its image is the rank's own.
        others = np.zeros(len(x), bool)
        for k in range(3):
            if grid[k] > 1:
                others |= owner[k] != 0
        cross += int((near & others).sum())
    v_ghost, v_cross = sm.ghost_volumes(list(sub), r, grid)
    rho = sm.DENSITY["diamond"]
    assert abs(rho * v_ghost / ghosts - 1) < 0.2, (rho * v_ghost, ghosts)
    assert abs(rho * v_cross / cross - 1) < 0.2, (rho * v_cross, cross)
    if all(g > 1 for g in grid):
        assert cross == ghosts and v_cross == v_ghost


def test_one_rank_folds_its_images_and_has_no_ghosts():
    assert sm.ghost_volumes([50.0, 50.0, 50.0], 6.0, (1, 1, 1)) == (0.0, 0.0)


def test_check_runs_against_the_recorded_two_gpu_runs():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "scaling_model.py"), "--check"],
                         capture_output=True, text=True, check=True).stdout
    rows = [ln for ln in out.splitlines() if ln.startswith("| strong") or ln.startswith("| weak")]
    assert len(rows) == 6, out
    # The step model within 10 % of every measured two-GPU step (doc/performance.md).
    for ln in rows[3:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        measured, model = float(cells[2]), float(cells[3])
        assert abs(model / measured - 1) < 0.10, ln
