"""The structures on which fairchem's own predictions are saved for comparison (issue #24, item 3).

Each is small (<= 64 atoms) so that a float64 CPU prediction of UMA-S 1.2 takes seconds, rattled
with a fixed seed (no structure sits at a symmetric point where errors could cancel), and wrapped
into its cell exactly as fairchem's AtomicData.from_ase wraps (ase.geometry.wrap_positions,
eps=0), so the positions saved with a prediction are the ones given here.

    structures(name) -> ase.Atoms       names: NAMES
    DEFAULT_SYSTEM[name] -> (task, charge, spin) used when the caller gives none

Units: Angstrom. Periodic cells are given in LAMMPS' restricted form (a along x, b in the xy
plane, |tilt| <= half the box length), so a LAMMPS data file can take the cell as it is.
"""

from __future__ import annotations

import numpy as np
from ase import Atoms
from ase.build import bulk, molecule
from ase.geometry import wrap_positions

NAMES = ("diamond", "fcc_cu", "bcc_cu", "mgo", "triclinic", "molecule")

# (task, charge, spin) per structure; spin is fairchem's spin multiplicity (omol: 2 = doublet).
DEFAULT_SYSTEM = {
    "diamond": ("omat", 0, 0),
    "fcc_cu": ("omat", 0, 0),
    "bcc_cu": ("omat", 0, 0),
    "mgo": ("omat", 0, 0),
    "triclinic": ("omat", 0, 0),
    # ethanol cation: 26 - 1 = 25 electrons, an odd count, so a doublet (multiplicity 2)
    "molecule": ("omol", 1, 2),
}

RATTLE_SIGMA = 0.05  # Angstrom, Gaussian per Cartesian component
MOLECULE_BOX = 30.0  # Angstrom, cubic box around the molecule; pbc False

# Fixed rattle seeds, one per structure, so that structures(name) is reproducible.
_SEEDS = {name: 1000 + i for i, name in enumerate(NAMES)}


def _rattled(atoms: Atoms, name: str) -> Atoms:
    atoms.rattle(stdev=RATTLE_SIGMA, seed=_SEEDS[name])
    if atoms.pbc.all():
        atoms.set_positions(wrap_positions(atoms.get_positions(), atoms.cell, pbc=atoms.pbc, eps=0))
    return atoms


def _triclinic() -> Atoms:
    # Rocksalt CuO (conventional cell, a = 4.2 A, 2x2x2 = 64 atoms) mapped through its fractional
    # coordinates onto a sheared cell: a non-orthogonal two-element cell with all three tilts
    # non-zero, box edges of 8.3-8.5 A and nearest-neighbour distances of about 1.9-2.3 A.
    atoms = bulk("CuO", "rocksalt", a=4.2, cubic=True).repeat((2, 2, 2))
    cell = np.array([[8.40, 0.00, 0.00],
                     [1.26, 8.30, 0.00],
                     [-0.84, 1.00, 8.50]])
    atoms.set_cell(cell, scale_atoms=True)
    return atoms


def structures(name: str) -> Atoms:
    """A fresh ase.Atoms for one of NAMES (charge and spin of the molecule in atoms.info)."""
    if name == "diamond":
        atoms = bulk("C", "diamond", a=3.567, cubic=True).repeat((2, 2, 2))      # 64 atoms
    elif name == "fcc_cu":
        atoms = bulk("Cu", "fcc", a=3.61, cubic=True).repeat((2, 2, 2))          # 32 atoms
    elif name == "bcc_cu":
        atoms = bulk("Cu", "bcc", a=2.87, cubic=True).repeat((3, 3, 3))          # 54 atoms
    elif name == "mgo":
        atoms = bulk("MgO", "rocksalt", a=4.21, cubic=True).repeat((2, 2, 2))    # 64 atoms
    elif name == "triclinic":
        atoms = _triclinic()                                                     # 64 atoms
    elif name == "molecule":
        atoms = molecule("CH3CH2OH")                                             # 9 atoms
        atoms.set_cell([MOLECULE_BOX] * 3)
        atoms.center()
        atoms.pbc = False
        _, charge, spin = DEFAULT_SYSTEM[name]
        atoms.info["charge"] = charge
        atoms.info["spin"] = spin
    else:
        raise ValueError(f"unknown structure '{name}' (valid: {', '.join(NAMES)})")
    return _rattled(atoms, name)
