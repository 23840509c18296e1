"""The shipped potentials (potentials/*.safetensors) load through the validating reader,
evaluate finite energies and forces, and reproduce the classical reference lattice constant.

The reference lattice constants are stored, not recomputed (no LAMMPS needed here):
  C  diamond, Tersoff 1989 (SiC.tersoff, C entry): 3.56583 A
  Cu fcc, Mishin EAM1 (Cu_mishin1.eam.alloy):       3.61493 A
both from `fix box/relax iso 0.0` + `minimize 0 1e-12` in LAMMPS 4 Jul 2026 (doc/data.md).
The model's E(a) is taken on a 2x2x2 supercell with a fixed 0.02 A displacement pattern, not on
the perfect lattice, which is a singular point of the per-degree RMS norm (doc/model.md, "Known
problems"); the classical a0 of such cells is larger by 0.11 % (C) and 0.04 % (Cu fcc)
(tools/train/validate.py), far below the 1 % tolerance.
"""

import itertools
import pathlib

import numpy as np
import pytest
import torch

from edgeframe_ref.calc import evaluate
from edgeframe_ref.potential_io import load_model
from edgeframe_ref.structures import Atoms

ROOT = pathlib.Path(__file__).resolve().parents[2]
POTENTIALS = ROOT / "potentials"

FCC = [[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]]
BASES = {"diamond": FCC + [[x + 0.25, y + 0.25, z + 0.25] for x, y, z in FCC], "fcc": FCC}
CASES = [  # file, element, lattice, classical a0 (A)
    ("C-diamond.safetensors", "C", "diamond", 3.56583),
    ("Cu.safetensors", "Cu", "fcc", 3.61493),
]
A_NOMINAL = {"diamond": 3.566, "fcc": 3.615}
RATTLE = 0.02             # A r.m.s. per component; see the module docstring
LATTICE_TOL = 0.01        # relative; the acceptance bound of issue #6
SCAN = np.linspace(0.98, 1.02, 9)  # a / a_ref; a0 must lie inside, parabola fit near the minimum
FORCE_SUM_TOL = 1e-9      # eV/A; sum of forces of a periodic cell (float64 accumulation)


def cubic(lattice, a, symbol, rattle=0.0, seed=0, reps=1):
    """reps^3 supercell of the cubic cell; the displacement pattern (rattle A r.m.s.) is fixed
    in fractional coordinates, so it scales with a."""
    basis = np.asarray(BASES[lattice], dtype=np.float64)
    cells = np.array(list(itertools.product(range(reps), repeat=3)), dtype=np.float64)
    frac = ((cells[:, None, :] + basis[None]) / reps).reshape(-1, 3)
    if rattle:
        frac = frac + rattle / (A_NOMINAL[lattice] * reps) * \
            np.random.default_rng(seed).standard_normal(frac.shape)
    cell = np.eye(3) * a * reps
    return Atoms(frac @ cell, cell, (True, True, True), [symbol] * len(frac))


@pytest.mark.parametrize("fname, element, lattice, a_ref", CASES)
def test_loads_and_is_finite(fname, element, lattice, a_ref):
    model = load_model(POTENTIALS / fname, dtype=torch.float64)
    assert model.cfg.species == [element]
    assert model.meta["provenance"]["data"].startswith(f"tools/data/{element}.npz")
    out = evaluate(model, cubic(lattice, a_ref, element, rattle=0.05, seed=1))
    assert np.isfinite(out["energy"])
    assert np.isfinite(out["forces"]).all() and np.isfinite(out["virial"]).all()
    assert np.abs(out["forces"].sum(0)).max() < FORCE_SUM_TOL
    # a cohesive crystal: per-atom energy well below the isolated-atom-like e0 offset
    assert out["energy"] / len(out["energies"]) < model.cfg.e0[element]


@pytest.mark.parametrize("fname, element, lattice, a_ref", CASES)
def test_lattice_constant(fname, element, lattice, a_ref):
    model = load_model(POTENTIALS / fname, dtype=torch.float64)
    e = [evaluate(model, cubic(lattice, a_ref * s, element, RATTLE, seed=3, reps=2),
                  forces=False)["energy"] for s in SCAN]
    k = int(np.argmin(e))
    assert 0 < k < len(SCAN) - 1, f"E(a) minimum not inside the scan: {e}"
    c = np.polyfit(SCAN[k - 1:k + 2], e[k - 1:k + 2], 2)
    a0 = -c[1] / (2 * c[0]) * a_ref
    assert abs(a0 / a_ref - 1) < LATTICE_TOL, f"{element} {lattice}: a0 {a0:.5f} vs {a_ref} A"
