"""The shipped model-v2 potentials (potentials/*-v2.safetensors) in LAMMPS equal the PyTorch
reference model (edgeframe_ref.model_v2, float64) on data-set frames: energy, forces and virial
of an MD frame, the perfect lattice (where v1's norm is singular) and the isolated atom (no
edges at all), in fp64."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from datagen.lammps_driver import NKTV2P, write_data  # noqa: E402
from edgeframe_ref.elements import ELEMENTS  # noqa: E402
from edgeframe_ref.neighbors import neighbor_list  # noqa: E402
from edgeframe_ref.potential_io_v2 import load_model_v2  # noqa: E402

MASS = {"C": 12.011, "Cu": 63.546}
FILES = {"C": "C-diamond-v2.safetensors", "Cu": "Cu-v2.safetensors"}
# (element, trajectory name suffix, frame within it)
FRAMES = [("C", "vacancy/v1_T1000", 3), ("C", "lattice/diamond_perfect_s1.0", 0), ("C", "atom/isolated", 0),
          ("Cu", "bcc/T450", 3), ("Cu", "lattice/fcc_perfect_s1.0", 0), ("Cu", "atom/isolated", 0)]

SCRIPT = """
units metal
atom_style atomic
atom_modify map array
boundary p p p
read_data {data}
pair_style edgeframe precision fp64
pair_coeff * * {potential} {element}
compute vir all pressure NULL virial
thermo_style custom step pe c_vir[1] c_vir[2] c_vir[3] c_vir[4] c_vir[5] c_vir[6]
thermo_modify format float %.17g norm no
dump d all custom 1 forces.dump id fx fy fz
dump_modify d sort id format float %.17g
run 0
"""


def frame(element, name, k):
    arrays = np.load(ROOT / "tools" / "data" / f"{element}.npz")
    meta = json.loads((ROOT / "tools" / "data" / f"{element}.json").read_text())
    t = next(t for t in meta["trajectories"] if t["name"].endswith(name))
    f = t["frames"][0] + k
    off = int(arrays["n_atoms"][:f].sum())
    return arrays["positions"][off:off + arrays["n_atoms"][f]], arrays["cell"][f]


def reference(model, element, pos, cell):
    """Energy, forces [N, 3] and virial [3, 3] (eV) of the reference model, float64."""
    i, j, s = neighbor_list(pos, cell, (True, True, True), model.cfg.r_cut)
    vec = (torch.as_tensor(pos)[j] - torch.as_tensor(pos)[i] + s.to(torch.float64) @ torch.as_tensor(cell))
    vec.requires_grad_(True)
    z = torch.full((len(pos),), ELEMENTS.index(element) + 1, dtype=torch.int64)
    model.set_system(z)
    e = model(z, i, j, vec).sum()
    if vec.numel():
        (g,) = torch.autograd.grad(e, vec)
    else:
        g = torch.zeros_like(vec)
    forces = torch.zeros(len(pos), 3, dtype=torch.float64).index_add(0, i, g).index_add(0, j, -g)
    virial = -(vec.detach()[:, :, None] * g[:, None, :]).sum(0)
    return float(e.detach()), forces.numpy(), virial.numpy()


@pytest.mark.parametrize("element,name,k", FRAMES)
def test_shipped_v2_potential_equals_the_reference(lammps, tmp_path, element, name, k):
    potential = ROOT / "potentials" / FILES[element]
    pos, cell = frame(element, name, k)
    write_data(tmp_path / "frame.data", pos, cell, MASS[element])
    proc = lammps(SCRIPT.format(data=tmp_path / "frame.data", potential=potential, element=element))
    assert proc.returncode == 0, proc.output[-3000:]
    row = None
    for line in proc.output.splitlines():
        w = line.split()
        if len(w) == 8 and w[0] == "0":
            row = [float(v) for v in w]
    assert row is not None, proc.output[-2000:]
    lines = (tmp_path / "forces.dump").read_text().splitlines()[9:]
    f_lmp = np.array([[float(v) for v in ln.split()[1:4]] for ln in lines])
    e_ref, f_ref, w_ref = reference(load_model_v2(potential), element, pos, cell)
    assert row[1] == pytest.approx(e_ref, rel=1e-10, abs=1e-10)
    assert np.abs(f_lmp - f_ref).max() <= 1e-9 * max(1.0, np.abs(f_ref).max())
    w_lmp = np.array(row[2:8]) * abs(np.linalg.det(cell)) / NKTV2P
    w_ref6 = np.array([w_ref[0, 0], w_ref[1, 1], w_ref[2, 2], w_ref[0, 1], w_ref[0, 2], w_ref[1, 2]])
    assert np.abs(w_lmp - w_ref6).max() <= 1e-9 * max(1.0, np.abs(w_ref6).max())
    if name.startswith("lattice/"):
        # the perfect lattice: symmetry makes every force zero; v1 gave 0.34 eV/A here
        assert np.abs(f_lmp).max() < 1e-8
