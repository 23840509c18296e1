"""Helpers for LAMMPS-vs-reference tests: write a structure as a LAMMPS data file (converting
triclinic cells to LAMMPS' restricted form), and read back what LAMMPS dumped."""
import os
import re
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

import edgeframe_ref as ef  # noqa: E402
from edgeframe_ref import calc, potential_io, random_init, structures  # noqa: E402,F401

# How the tests start edgeframe/kk. EDGEFRAME_KOKKOS_ARGS="-k on g 1 -sf kk" runs them on a GPU
# (scripts/gpu_session.sh, issue #7); a CUDA LAMMPS refuses "-k on t 1" ("no GPUs are requested").
KOKKOS_ARGS = tuple(os.environ.get("EDGEFRAME_KOKKOS_ARGS", "-k on t 1 -sf kk").split())
ON_GPU = re.search(r"-k\s+on\s+g\s+\d", " ".join(KOKKOS_ARGS)) is not None

METAL_NKTV2P = 1.6021765e6  # LAMMPS' force->nktv2p in metal units (bar A^3 per eV)


def lammps_frame(atoms):
    """Rotation Q (3x3) with cell_lammps = cell @ Q.T lower triangular (a along x, b in xy)."""
    a, b, c = atoms.cell
    ex = a / np.linalg.norm(a)
    ez = np.cross(a, b)
    ez /= np.linalg.norm(ez)
    ey = np.cross(ez, ex)
    return np.array([ex, ey, ez])


def write_data(path, atoms, elements, open_box_pad=20.0):
    """LAMMPS data file (atom_style atomic); types follow `elements`. Returns rotation Q
    (positions_lammps = positions @ Q.T)."""
    n = len(atoms)
    types = [elements.index(s) + 1 for s in atoms.symbols]
    if all(atoms.pbc):
        q = lammps_frame(atoms)
        cell = atoms.cell @ q.T
        pos = atoms.positions @ q.T
        lo = np.zeros(3)
        hi = np.array([cell[0, 0], cell[1, 1], cell[2, 2]])
        tilt = (cell[1, 0], cell[2, 0], cell[2, 1])
    elif any(atoms.pbc):
        # Mixed boundaries (a slab): an orthogonal cell, periodic along its periodic axes and
        # padded like an open box along the others.
        cell = np.asarray(atoms.cell, dtype=np.float64)
        if np.abs(cell - np.diag(np.diag(cell))).max() > 0:
            raise ValueError("write_data: mixed boundaries need an orthogonal cell")
        q = np.eye(3)
        pos = atoms.positions
        lo = np.where(atoms.pbc, 0.0, pos.min(0) - open_box_pad)
        hi = np.where(atoms.pbc, np.diag(cell), pos.max(0) + open_box_pad)
        tilt = None
    else:
        q = np.eye(3)
        pos = atoms.positions
        lo = pos.min(0) - open_box_pad
        hi = pos.max(0) + open_box_pad
        tilt = None
    lines = ["edgeframe test structure", "", f"{n} atoms", f"{len(elements)} atom types", ""]
    for d, name in enumerate("xyz"):
        lines.append(f"{float(lo[d])!r} {float(hi[d])!r} {name}lo {name}hi")
    if tilt is not None and any(abs(t) > 0 for t in tilt):
        lines.append(f"{float(tilt[0])!r} {float(tilt[1])!r} {float(tilt[2])!r} xy xz yz")
    lines += ["", "Masses", ""] + [f"{k + 1} 1.0" for k in range(len(elements))]
    lines += ["", "Atoms # atomic", ""]
    lines += [f"{k + 1} {types[k]} {float(pos[k, 0])!r} {float(pos[k, 1])!r} {float(pos[k, 2])!r}" for k in range(n)]
    Path(path).write_text("\n".join(lines) + "\n")
    return q


def read_dump(path, n):
    """Rows of the custom dump written by RUN_0_SCRIPT, sorted by atom id."""
    lines = Path(path).read_text().splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("ITEM: ATOMS")) + 1
    rows = np.array([[float(v) for v in line.split()] for line in lines[start:start + n]])
    return rows[np.argsort(rows[:, 0])]


RUN_0_SCRIPT = """
units metal
atom_style atomic
boundary {boundary}
atom_modify map array
{pre}
read_data data.lmp
pair_style edgeframe precision {precision}
pair_coeff * * {model} {elements}
compute pe_atom all pe/atom
compute w_atom all stress/atom NULL virial
compute cw_atom all centroid/stress/atom NULL virial
compute w all pressure NULL virial
variable vxx equal c_w[1]*vol/{nktv2p}
variable vyy equal c_w[2]*vol/{nktv2p}
variable vzz equal c_w[3]*vol/{nktv2p}
variable vxy equal c_w[4]*vol/{nktv2p}
variable vxz equal c_w[5]*vol/{nktv2p}
variable vyz equal c_w[6]*vol/{nktv2p}
thermo_style custom step pe v_vxx v_vyy v_vzz v_vxy v_vxz v_vyz
thermo_modify format float %.17g
dump d all custom 1 forces.dump id fx fy fz c_pe_atom c_w_atom[*] c_cw_atom[*]
dump_modify d format float %.17g sort id
{extra}
run 0 post no
"""


def thermo_row(output):
    """The thermo line of `run 0` as floats (step, pe, 6 virial components in eV)."""
    lines = output.splitlines()
    k = next(k for k, line in enumerate(lines) if line.split()[:2] == ["Step", "PotEng"])
    return [float(v) for v in lines[k + 1].split()]
