#!/usr/bin/env python3
"""NVE energy conservation of one potential in several precisions, through the engine's Python
module (edgeframe.Model, doc/python.md): a periodic diamond supercell from the perfect lattice
with Maxwell-Boltzmann velocities, velocity Verlet, the neighbour pairs rebuilt every step by
minimum image (so the box must exceed twice the cutoff). Writes, per precision, a CSV of the
step's potential, kinetic and total energy, and summary.json with each run's figures:
max |E - E(0)|, the band of E from step --settle on, its linear drift and the time per step.
Plot with tools/plot_nve_precision.py.

    PYTHONPATH=build/python python3 bench/nve_precision.py --potential P --out DIR \
        [--precisions fp64,fp32,tf32,tf32x3,bf16] [--cells 4] [--steps 1000] [--dt 0.5] \
        [--temperature 600] [--seed 1]
"""

# edgeframe before numpy: on the GPU machine's Python 3.12 (numpy 2.5.2 with scipy-openblas,
# torch 2.11) creating a Model segfaulted when numpy or torch had been imported first, and worked
# the other way round (bench/results/h100_2026-12-06/results.md, call 10).
import edgeframe  # noqa: I001  (isort: skip)

import argparse
import json
import pathlib
import sys
import time

import numpy as np

KB = 8.617333262e-5          # eV / K
AMU_A2_FS2_IN_EV = 103.642697  # 1 amu A^2 / fs^2 in eV
MASS_C = 12.011
A_DIAMOND = 3.5668


def diamond(cells, a):
    basis = np.array([[0, 0, 0], [0, .5, .5], [.5, 0, .5], [.5, .5, 0],
                      [.25, .25, .25], [.25, .75, .75], [.75, .25, .75], [.75, .75, .25]])
    grid = np.array([[i, j, k] for i in range(cells) for j in range(cells) for k in range(cells)], dtype=float)
    return ((grid[:, None, :] + basis[None, :, :]).reshape(-1, 3)) * a


def pairs(x, box, r_cut):
    """Directed pairs (receiver i, sender j) within r_cut by minimum image, with the sender's
    image offset: x_j + shift - x_i is the edge vector."""
    d = x[None, :, :] - x[:, None, :]
    shift = -box * np.round(d / box)
    r2 = ((d + shift) ** 2).sum(-1)
    np.fill_diagonal(r2, np.inf)
    i, j = np.nonzero(r2 < r_cut * r_cut)
    return i.astype(np.int32), j.astype(np.int32), shift[i, j]


def run(potential, precision, x0, v0, box, steps, dt, settle, out_dir):
    model = edgeframe.Model(str(potential), precision)
    n = len(x0)
    species = np.asarray(model.species_of(["C"] * n), dtype=np.int32)
    if model.format_version == 2:
        counts = np.zeros(model.max_num_elements)
        counts[6] = n
        model.set_system("", None, None, counts.tolist())
    r_cut = model.r_cut
    if 2 * r_cut >= box.min():
        sys.exit(f"nve_precision: the box ({box.min():.2f} A) must exceed twice the cutoff ({r_cut} A); use more --cells")

    def forces(x):
        i, j, s = pairs(x, box, r_cut)
        out = model.compute(x, species, i, j, s, energies=False, virial=False, atom_virial=False)
        return out["energy"], out["forces"]

    x, v = x0.copy(), v0.copy()
    e_pot, f = forces(x)
    rows = []
    t0 = time.perf_counter()
    for step in range(steps + 1):
        e_kin = 0.5 * MASS_C * (v ** 2).sum() * AMU_A2_FS2_IN_EV
        rows.append((step, step * dt, e_pot / n, e_kin / n, (e_pot + e_kin) / n))
        if step == steps:
            break
        v += 0.5 * dt * f / (MASS_C * AMU_A2_FS2_IN_EV)
        x += dt * v
        e_pot, f = forces(x)
        if not np.isfinite(e_pot) or not np.isfinite(f).all():
            return {"precision": precision, "error": f"non-finite energy or forces at step {step + 1}"}
        v += 0.5 * dt * f / (MASS_C * AMU_A2_FS2_IN_EV)
    seconds = time.perf_counter() - t0
    rows = np.array(rows)
    np.savetxt(out_dir / f"nve-{precision}.csv", rows, delimiter=",", header="step,time_fs,epot_eV_atom,ekin_eV_atom,etot_eV_atom", comments="")
    e = rows[:, 4]
    late = rows[settle:]
    slope = np.polyfit(late[:, 1], late[:, 4], 1)[0] if len(late) > 2 else float("nan")  # eV/atom/fs
    return {
        "precision": precision,
        "atoms": n,
        "steps": steps,
        "dt_fs": dt,
        "max_abs_dE_meV_atom": float(np.abs(e - e[0]).max() * 1e3),
        "band_from_settle_meV_atom": float((late[:, 4].max() - late[:, 4].min()) * 1e3),
        "drift_meV_atom_ps": float(slope * 1e3 * 1e3),
        "temperature_mean_K": float(2 * rows[settle:, 3].mean() / (3 * KB)),
        "seconds_per_step": seconds / steps,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--potential", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--precisions", default="fp64,fp32,tf32,tf32x3,bf16")
    ap.add_argument("--cells", type=int, default=4)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--dt", type=float, default=0.5)
    ap.add_argument("--temperature", type=float, default=600.0)
    ap.add_argument("--settle", type=int, default=20, help="steps left out of the band and the drift")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    out_dir = pathlib.Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)

    x0 = diamond(args.cells, A_DIAMOND)
    box = np.full(3, args.cells * A_DIAMOND)
    rng = np.random.default_rng(args.seed)
    v0 = rng.normal(size=x0.shape) * np.sqrt(KB * args.temperature / (MASS_C * AMU_A2_FS2_IN_EV))
    v0 -= v0.mean(0)
    v0 *= np.sqrt(args.temperature / (MASS_C * AMU_A2_FS2_IN_EV * (v0 ** 2).sum() / (3 * (len(x0) - 1) * KB)))

    summary = {"potential": pathlib.Path(args.potential).name, "execution_space": edgeframe.execution_space(),
               "runs": []}
    for p in args.precisions.split(","):
        print(f"nve_precision: {p}: {args.steps} steps of {args.dt} fs, {len(x0)} atoms ...", flush=True)
        try:
            r = run(args.potential, p, x0, v0, box, args.steps, args.dt, args.settle, out_dir)
        except (ValueError, RuntimeError) as e:  # a precision this build lacks, a failed step
            r = {"precision": p, "error": str(e)}
        print("  " + json.dumps(r), flush=True)
        summary["runs"].append(r)
        (out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
