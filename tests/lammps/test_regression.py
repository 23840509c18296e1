"""Regression: a LAMMPS NVE run with pair_style edgeframe, compared step by step with a
trajectory integrated independently by the PyTorch reference (tools/regression/reference_md.py)."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from reference_case import REPO, structures
from test_vs_reference import small_model  # noqa: F401  (fixture)

sys.path.insert(0, str(REPO / "tools" / "regression"))
import reference_md  # noqa: E402

# 20 steps of 0.5 fs: two fp64 integrations of the same equations, with forces that agree to
# ~1e-13, stay within ~1e-10 A of each other; 1e-8 A leaves room for growth, and any wrong
# force term (or a mass or unit slip) moves atoms by orders of magnitude more.
POSITION_TOL = 1e-8      # Angstrom
ENERGY_REL_TOL = 1e-10


def test_nve_trajectory_matches_the_reference_integrator(lammps, tmp_path, small_model):
    model, path = small_model
    atoms = structures.rattle(structures.diamond((2, 2, 2)), 0.05, seed=1)
    v = reference_md.initial_velocities(atoms, 600.0, seed=5)
    reference_md.write_data_with_velocities(tmp_path / "start.data", atoms, v, ["C", "Cu"])
    ref = reference_md.run(model, atoms, v, dt=0.0005, steps=20)

    script = f"""
units metal
atom_style atomic
atom_modify map array
read_data start.data
pair_style edgeframe precision fp64
pair_coeff * * {path} C Cu
timestep 0.0005
fix 1 all nve
thermo 1
thermo_style custom step pe ke
thermo_modify format float %.17g
dump d all custom 1 traj.dump id xu yu zu
dump_modify d format float %.17g sort id
run 20
"""
    run = lammps(script)
    assert run.returncode == 0, run.output[-2000:]
    lines = run.output.splitlines()
    k = next(k for k, line in enumerate(lines) if line.split()[:3] == ["Step", "PotEng", "KinEng"])
    thermo = np.array([[float(x) for x in line.split()] for line in lines[k + 1:k + 22]])
    frames = Path(tmp_path / "traj.dump").read_text().split("ITEM: TIMESTEP")[1:]
    assert len(frames) == 21
    for step, frame in enumerate(frames):
        rows = frame.strip().splitlines()
        start = next(i for i, r in enumerate(rows) if r.startswith("ITEM: ATOMS")) + 1
        pos = np.array([[float(x) for x in r.split()[1:4]] for r in rows[start:start + len(atoms)]])
        expect = np.array(ref[step]["positions"])
        assert np.abs(pos - expect).max() < POSITION_TOL, (step, np.abs(pos - expect).max())
        assert abs(thermo[step, 1] - ref[step]["pe"]) <= ENERGY_REL_TOL * abs(ref[step]["pe"])
        assert abs(thermo[step, 2] - ref[step]["ke"]) <= 1e-9 * max(ref[step]["ke"], 1.0)


# The stored references (tests/data/regression, replayed with examples/regression/in.regression:
# the shipped potentials, 64-atom diamond and 54-atom
# bcc Cu, 20 steps of 0.5 fs), replayed as a user would: in.regression, then compare.py.
# Measured worst deviations over the 20 steps (the shipped model v2 potentials, C-diamond-v2
# version 4 and Cu-v2): diamond fp64 1.3e-15 A, fp32 1.7e-8 A; bcc Cu fp64 3.8e-15 A, fp32
# 2.8e-9 A (fp32 forces are within ~1e-6 of fp64, and position errors grow as t^2 from there).
# Earlier files gave the same orders (C-diamond-v2 version 3: 2.0e-15 / 1.7e-8 A; carbon v9:
# 1.5e-15 / 2.1e-8 A; copper v4: 5.8e-15 / 1.4e-9 A).
STORED_TOL = {"fp64": 1e-8, "fp32": 3e-7}    # Angstrom: >= 2.6e6x and >= 17x above the measured
STORED = {"diamond": ("C-diamond-v2.safetensors", "C"), "cu-bcc": ("Cu-v2.safetensors", "Cu")}


@pytest.mark.parametrize("precision", ["fp64", "fp32"])
@pytest.mark.parametrize("system", ["diamond", "cu-bcc"])
def test_stored_reference_replays(lammps, tmp_path, system, precision):
    potential, element = STORED[system]
    example = REPO / "examples" / "regression"
    stored = REPO / "tests" / "data" / "regression" / system
    cmd = [lammps.lmp, "-in", str(example / "in.regression"), "-log", "none", "-var", "plugin", lammps.plugin,
           "-var", "potential", str(REPO / "potentials" / potential), "-var", "element", element,
           "-var", "dir", str(stored), "-var", "precision", precision]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    run = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, (run.stdout + run.stderr)[-2000:]
    check = subprocess.run([sys.executable, str(REPO / "tools" / "regression" / "compare.py"),
                            str(tmp_path / "regression.dump"), str(stored / "reference.json"),
                            "--tol", repr(STORED_TOL[precision])], capture_output=True, text=True)
    print(check.stdout.splitlines()[-1] if check.stdout else check.stderr)
    assert check.returncode == 0 and "compare: PASS" in check.stdout, (
        check.stdout[-1500:] + f"\nIf potentials/{potential} was changed on purpose, regenerate the reference "
        "with the command in examples/regression/README.md.")
