#!/usr/bin/env python3
"""Short Langevin MD with the reference model: does a potential stay stable?

    $EDGEFRAME_PYTHON tools/train/md_check.py --potential potentials/Cu.safetensors \
        --lattice fcc --a 3.615 --reps 2 2 2 --temps 300 1500 --steps 1000 --dt 2.0

BAOAB Langevin integrator (friction --gamma, default 10/ps; velocities drawn at 2T), forces from
edgeframe_ref.calc.evaluate (float64), masses from the element. Per temperature: mean
temperature over the second half, potential-energy range, smallest interatomic distance seen,
and whether anything became non-finite. Slow (brute-force neighbour list every step): it is a
smoke test of stability, not a production MD engine; LAMMPS with the plugin is.
"""

import argparse
import math
import pathlib
import sys

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from edgeframe_ref.calc import evaluate  # noqa: E402
from edgeframe_ref.potential_io import load_model  # noqa: E402
from edgeframe_ref.structures import Atoms  # noqa: E402

MASS = {"C": 12.011, "Cu": 63.546}       # g/mol
KB = 8.617333262e-5                        # eV/K
# metal units: F [eV/A] / m [g/mol] -> A/fs^2 needs 1/1.0364269e2 ... : a = F/m * 9.64853e-3
ACC = 9.648533212e-3                       # (eV/A)/(g/mol) in A/fs^2
FCC = [[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]]
BASES = {"diamond": FCC + [[x + 0.25, y + 0.25, z + 0.25] for x, y, z in FCC], "fcc": FCC,
         "bcc": [[0, 0, 0], [0.5, 0.5, 0.5]]}


def crystal(lattice, a, reps, symbol):
    import itertools
    basis = np.asarray(BASES[lattice], dtype=np.float64)
    cells = np.array(list(itertools.product(*[range(r) for r in reps])), dtype=np.float64)
    pos = (cells[:, None, :] + basis[None]).reshape(-1, 3) * a
    return Atoms(pos, np.diag(np.asarray(reps, dtype=np.float64) * a), (True,) * 3,
                 [symbol] * len(pos))


def run(model, atoms, temp, steps, dt, gamma, seed):
    rng = np.random.default_rng(seed)
    m = MASS[atoms.symbols[0]]
    n = len(atoms)
    # start at 2T: a perfect lattice shares its kinetic energy with the potential energy
    v = rng.standard_normal((n, 3)) * math.sqrt(2 * KB * temp / m * ACC)   # A/fs
    v -= v.mean(0)
    out = evaluate(model, atoms, want_virial=False)
    f = out["forces"]
    c1 = math.exp(-gamma * dt)
    c2 = math.sqrt((1 - c1 * c1) * KB * temp / m * ACC)
    temps, pes, dmin = [], [], np.inf
    for step in range(steps):
        v += 0.5 * dt * f / m * ACC                                   # B
        atoms.positions += 0.5 * dt * v                               # A
        v = c1 * v + c2 * rng.standard_normal((n, 3))                 # O
        atoms.positions += 0.5 * dt * v                               # A
        out = evaluate(model, atoms, want_virial=False)
        f = out["forces"]
        v += 0.5 * dt * f / m * ACC                                   # B
        if not (np.isfinite(out["energy"]) and np.isfinite(f).all()):
            return dict(ok=False, step=step)
        ke = 0.5 * m * (v * v).sum() / ACC
        temps.append(2 * ke / (3 * (n - 1) * KB))
        pes.append(out["energy"] / n)
        i, j, s = out["edges"]
        vec = atoms.positions[j.numpy()] - atoms.positions[i.numpy()] + s.numpy() @ atoms.cell
        if len(vec):
            dmin = min(dmin, float(np.linalg.norm(vec, axis=1).min()))
    half = len(temps) // 2
    return dict(ok=True, steps=steps, T_mean=float(np.mean(temps[half:])),
                pe_min=float(min(pes)), pe_max=float(max(pes)), dmin=dmin)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--potential", required=True)
    ap.add_argument("--lattice", required=True, choices=sorted(BASES))
    ap.add_argument("--a", type=float, required=True)
    ap.add_argument("--reps", type=int, nargs=3, default=(2, 2, 2))
    ap.add_argument("--temps", type=float, nargs="+", default=[300.0, 1500.0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--dt", type=float, default=1.0, help="fs")
    ap.add_argument("--gamma", type=float, default=1e-2, help="friction, 1/fs")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_num_threads(1)
    model = load_model(args.potential, dtype=torch.float64)
    symbol = model.cfg.species[0]
    for temp in args.temps:
        atoms = crystal(args.lattice, args.a, args.reps, symbol)
        r = run(model, atoms, temp, args.steps, args.dt, args.gamma, args.seed)
        print(f"{symbol} {args.lattice} {len(atoms)} atoms, {temp:.0f} K, {args.steps} x "
              f"{args.dt} fs: {r}", flush=True)


if __name__ == "__main__":
    main()
