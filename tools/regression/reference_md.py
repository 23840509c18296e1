"""Velocity-Verlet MD with the PyTorch reference model, integrated exactly as LAMMPS' fix nve
does in metal units, to make reference trajectories that pair_style edgeframe runs are
compared with step by step (examples/regression, tests/lammps/test_regression.py).

    v += dt/2 F/m * ftm2v;  x += dt v;  F = F(x);  v += dt/2 F/m * ftm2v
    ftm2v = 1 / 1.0364269e-4 (LAMMPS update.cpp, metal), masses in g/mol, dt in ps.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from edgeframe_ref import calc, potential_io, potential_io_v2, structures  # noqa: E402

FTM2V = 1.0 / 1.0364269e-4
MVV2E = 1.0364269e-4
BOLTZ = 8.617343e-5
MASSES = {"C": 12.011, "Cu": 63.546}


def initial_velocities(atoms, temperature, seed):
    """Gaussian velocities (A/ps) at `temperature`, zero total momentum."""
    gen = torch.Generator().manual_seed(seed)
    m = np.array([MASSES[s] for s in atoms.symbols])
    sigma = np.sqrt(BOLTZ * temperature / (m * MVV2E))
    v = torch.randn(len(atoms), 3, dtype=torch.float64, generator=gen).numpy() * sigma[:, None]
    v -= (m[:, None] * v).sum(0) / m.sum()
    return v


def run(model, atoms, velocities, dt, steps, progress=False):
    """Returns per-step dict lists: positions (unwrapped), pe, ke (eV)."""
    m = np.array([MASSES[s] for s in atoms.symbols])[:, None]
    x = atoms.copy()
    v = velocities.copy()
    out = calc.evaluate(model, x, want_virial=False)
    f = out["forces"]
    frames = []
    for step in range(steps + 1):
        ke = 0.5 * MVV2E * float((m * v * v).sum())
        frames.append({"step": step, "pe": out["energy"], "ke": ke, "positions": x.positions.tolist()})
        if progress:
            print(f"  step {step:4d}  pe {out['energy']:.10f}  ke {ke:.10f}", flush=True)
        if step == steps:
            break
        v = v + 0.5 * dt * f / m * FTM2V
        x.positions = x.positions + dt * v
        out = calc.evaluate(model, x, want_virial=False)
        f = out["forces"]
        v = v + 0.5 * dt * f / m * FTM2V
    return frames


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--potential", required=True)
    ap.add_argument("--data", required=True, help="write the LAMMPS data file (with velocities) here")
    ap.add_argument("--out", required=True, help="reference trajectory JSON")
    ap.add_argument("--structure", default="diamond64", choices=["diamond64", "bcc_cu54"])
    ap.add_argument("--temperature", type=float, default=600.0)
    ap.add_argument("--dt", type=float, default=0.0005, help="ps")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()

    if potential_io.format_version(args.potential) == potential_io_v2.FORMAT_VERSION_V2:
        model = potential_io_v2.load_model_v2(args.potential)  # default task, charge and spin
    else:
        model = potential_io.load_model(args.potential)
    if args.structure == "diamond64":
        atoms = structures.rattle(structures.diamond((2, 2, 2)), 0.05, seed=1)
    else:
        atoms = structures.rattle(structures.bcc((3, 3, 3), a=2.87), 0.05, seed=2)
    v = initial_velocities(atoms, args.temperature, args.seed)
    elements = sorted(set(atoms.symbols))  # one atom type per element present
    write_data_with_velocities(args.data, atoms, v, elements)
    frames = run(model, atoms, v, args.dt, args.steps, progress=True)
    Path(args.out).write_text(json.dumps({
        "generator": "tools/regression/reference_md.py", "potential": Path(args.potential).name,
        "structure": args.structure, "dt_ps": args.dt, "steps": args.steps, "seed": args.seed,
        "temperature": args.temperature, "torch": torch.__version__, "frames": frames}))


def write_data_with_velocities(path, atoms, v, elements):
    n = len(atoms)
    cell = atoms.cell
    assert np.allclose(cell, np.diag(np.diag(cell))), "orthogonal cells only"
    lines = ["edgeframe regression start", "", f"{n} atoms", f"{len(elements)} atom types", ""]
    for d, name in enumerate("xyz"):
        lines.append(f"0.0 {float(cell[d, d])!r} {name}lo {name}hi")
    lines += ["", "Masses", ""] + [f"{k + 1} {MASSES[e]}" for k, e in enumerate(elements)]
    lines += ["", "Atoms # atomic", ""]
    types = [elements.index(s) + 1 for s in atoms.symbols]
    p = atoms.positions
    lines += [f"{k + 1} {types[k]} {float(p[k, 0])!r} {float(p[k, 1])!r} {float(p[k, 2])!r}" for k in range(n)]
    lines += ["", "Velocities", ""]
    lines += [f"{k + 1} {float(v[k, 0])!r} {float(v[k, 1])!r} {float(v[k, 2])!r}" for k in range(n)]
    Path(path).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
