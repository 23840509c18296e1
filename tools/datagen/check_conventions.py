#!/usr/bin/env python3
"""Check the stored virial and force conventions against finite differences of LAMMPS energies.

For one frame per element (a sheared, triclinic, hot cell), with E(.) the classical energy:
  forces:  F_ka = -(E(x_k + h e_a) - E(x_k - h e_a)) / 2h              for a few atoms k
  virial:  W_ba = -(E((1 + h e_ab) x) - E((1 - h e_ab) x)) / 2h          a <= b (upper
           triangular strains keep LAMMPS' restricted-triclinic cell), cell and atoms alike
and both must match the data set's forces and virial (doc/model.md: W_ab = -dE/d eps_ba).
    $EDGEFRAME_PYTHON tools/datagen/check_conventions.py tools/data
"""

import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from datagen.lammps_driver import evaluate_static  # noqa: E402
from datagen.recipes import POTENTIALS  # noqa: E402

H_STRAIN = 1e-5      # dimensionless
H_POS = 1e-5         # Angstrom


def frame(data, meta, name):
    t = [k for k, tr in enumerate(meta["trajectories"]) if tr["name"] == name][0]
    f = int(np.nonzero(data["traj"] == t)[0][5])
    off = int(data["n_atoms"][:f].sum())
    n = int(data["n_atoms"][f])
    return (data["positions"][off:off + n], data["cell"][f], data["energy"][f],
            data["forces"][off:off + n], data["virial"][f])


def check(element, name, datadir):
    import json
    data = np.load(datadir / f"{element}.npz")
    meta = json.loads((datadir / f"{element}.json").read_text())
    pos, cell, energy, forces, virial = frame(data, meta, name)
    pot = POTENTIALS[element]
    configs = [(pos, cell)]
    atoms = [0, 7, 19]
    for k in atoms:
        for a in range(3):
            for sgn in (1, -1):
                p = pos.copy()
                p[k, a] += sgn * H_POS
                configs.append((p, cell))
    pairs = [(a, b) for a in range(3) for b in range(a, 3)]
    for a, b in pairs:
        for sgn in (1, -1):
            eps = np.eye(3)
            eps[a, b] += sgn * H_STRAIN
            # x -> (1 + eps) x for atoms (column vectors) and for each cell row
            configs.append((pos @ eps.T, cell @ eps.T))
    res = evaluate_static(configs, pot)
    e0 = res[0]["energy"]
    print(f"{element} {name}: stored E {energy:.10f}, re-evaluated {e0:.10f} eV")
    k = 1
    worst_f = 0.0
    for atom in atoms:
        for a in range(3):
            fd = -(res[k]["energy"] - res[k + 1]["energy"]) / (2 * H_POS)
            worst_f = max(worst_f, abs(fd - forces[atom, a]))
            k += 2
    worst_w = 0.0
    for a, b in pairs:
        fd = -(res[k]["energy"] - res[k + 1]["energy"]) / (2 * H_STRAIN)
        worst_w = max(worst_w, abs(fd - virial[b, a]))
        print(f"  W[{b}{a}] stored {virial[b, a]: .6f}  -dE/deps_{a}{b} {fd: .6f} eV")
        k += 2
    print(f"  max |F - F_fd| = {worst_f:.2e} eV/A, max |W - W_fd| = {worst_w:.2e} eV")
    return worst_f < 1e-4 and worst_w < 1e-3


def main():
    datadir = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "tools/data")
    ok = check("C", "C/shear/tilt3_T800", datadir) if (datadir / "C.npz").exists() else True
    if (datadir / "Cu.npz").exists():
        ok &= check("Cu", "Cu/strain/bcc_tilt9_T300", datadir)
    print("conventions OK" if ok else "conventions MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
