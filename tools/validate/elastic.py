#!/usr/bin/env python3
"""Cubic elastic constants C11, C12, C44 in LAMMPS: edgeframe plugin vs the classical potential.

    source $(scripts/bootstrap.sh --print-env)
    $EDGEFRAME_PYTHON tools/validate/elastic.py --element C --potential potentials/C-diamond-v2.safetensors
    $EDGEFRAME_PYTHON tools/validate/elastic.py --element Cu --potential potentials/Cu-v2.safetensors
        [--plugin build/src/lammps/edgeframeplugin.so] [--relax] [--out elastic-Cu.json]

Supercell of the conventional cubic cell (diamond 3^3 = 216 atoms, fcc 3^3 = 108, bcc 4^3 = 128)
at the classical potential's relaxed lattice constant (--a to change). Strains, applied as
displacement gradients F = I + e (lower-triangular cells, LAMMPS' restricted triclinic form):
normal e_aa = +-delta for a = x, y, z, simple shears u_a = +-gamma x_b for (a, b) = (y, z),
(x, z), (x, y); every configuration is a `run 0` (stress from the virial, no kinetic part),
and central differences of the stress sigma = -P give
  C11 = -dP_aa/de_aa,  C12 = -dP_bb/de_aa (b != a),  C44 = -dP_ab/dgamma_ab,
each averaged over the three equivalent directions (their spread is printed as a symmetry check).
`--relax` minimises the atoms at fixed box before each `run 0` (relaxed-ion constants; for
diamond C44 this is the physical one, the clamped-ion C44 is larger by the internal-strain
term; fcc and bcc sites are inversion centres, so there both are equal).

Rattle: the perfect lattice is a singular point of the model's per-degree RMS norm (doc/model.md,
"Known problems"), so by default the atoms carry a fixed random displacement pattern (--rattle
A r.m.s., the same pattern, strained with the cell, for every strain and both potentials) and
the constants are averaged over --seeds patterns; --rattle 0 gives the perfect lattice.
"""
import argparse
import itertools
import json
import pathlib
import re
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from lmp import (A0_CLASSICAL, BAR_TO_GPA, DEFAULT_PLUGIN, MASS, header, pair_block,  # noqa: E402
                 run_lmp)
from datagen.lammps_driver import write_data  # noqa: E402

FCC = [[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]]
BASES = {"diamond": FCC + [[x + 0.25, y + 0.25, z + 0.25] for x, y, z in FCC],
         "fcc": FCC, "bcc": [[0, 0, 0], [0.5, 0.5, 0.5]]}
REPS = {"diamond": 3, "fcc": 3, "bcc": 4}
LATTICES = {"C": ["diamond"], "Cu": ["fcc", "bcc"]}
PCOLS = ["pxx", "pyy", "pzz", "pyz", "pxz", "pxy"]
SHEARS = [(1, 2), (0, 2), (0, 1)]        # (a, b): u_a = gamma x_b; P component yz, xz, xy


def strains(delta, gamma):
    """[(name, F)]: reference, +-delta normal, +-gamma simple shear (F lower triangular)."""
    out = [("ref", np.eye(3))]
    for a in range(3):
        for s in (+1, -1):
            F = np.eye(3)
            F[a, a] += s * delta
            out.append((f"e{'xyz'[a]}{'+' if s > 0 else '-'}", F))
    for a, b in SHEARS:
        for s in (+1, -1):
            F = np.eye(3)
            F[a, b] += s * gamma                   # x_a += gamma x_b: column vectors x' = F x
            out.append((f"g{'xyz'[a]}{'xyz'[b]}{'+' if s > 0 else '-'}", F))
    return out


def supercell(lattice, a, reps, rattle, seed):
    basis = np.asarray(BASES[lattice], dtype=np.float64)
    cells = np.array(list(itertools.product(range(reps), repeat=3)), dtype=np.float64)
    pos = ((cells[:, None, :] + basis[None]) * a).reshape(-1, 3)
    if rattle:
        pos = pos + np.random.default_rng(1000 + seed).standard_normal(pos.shape) * rattle
    return pos, np.eye(3) * a * reps


def evaluate(model, element, lattice, a, reps, rattle, seed, delta, gamma, relax, args, work):
    """{strain name: 6 pressures in bar (+ pe)} for every strained configuration."""
    pos, cell = supercell(lattice, a, reps, rattle, seed)
    script = []
    configs = strains(delta, gamma)
    for k, (name, F) in enumerate(configs):
        # rows of `cell` are the box vectors; x' = F x for every point, so rows -> rows @ F^T
        write_data(work / f"c{k}.data", pos @ F.T, cell @ F.T, MASS[element])
        # after `clear` LAMMPS keeps a loaded plugin ("Restoring plugin"): load it once
        script += ["clear", header(model if k == 0 else "classical", args.plugin).strip(),
                   f"read_data c{k}.data",
                   pair_block(model, element, args.potential, args.precision).strip()]
        if relax:
            script += ["min_style cg", "minimize 0 1e-6 500 5000"]
        script += ["thermo_style custom step pe " + " ".join(PCOLS),
                   "thermo_modify format float %.15g", f"print 'CONFIG {k}'", "run 0"]
    log = run_lmp("\n".join(script) + "\n", work, tag=f"{model} {lattice} seed {seed}")
    out = {}
    chunks = re.split(r"^CONFIG (\d+)$", log, flags=re.M)
    for k_str, chunk in zip(chunks[1::2], chunks[2::2]):
        lines = chunk.splitlines()
        h = next(i for i, l in enumerate(lines) if l.split()[:2] == ["Step", "PotEng"])
        vals = [float(v) for v in lines[h + 1].split()]
        out[configs[int(k_str)][0]] = dict(pe=vals[1], **dict(zip(PCOLS, vals[2:])))
    if len(out) != len(configs):
        raise RuntimeError(f"{len(out)} of {len(configs)} configurations in the log")
    return out


def constants(res, delta, gamma):
    """C11, C12, C44 (GPa) and their spread over the three directions, P0 (GPa)."""
    d = lambda comp, name: -(res[name + "+"][comp] - res[name + "-"][comp]) * BAR_TO_GPA  # noqa
    c11 = [d(f"p{c}{c}", f"e{c}") / (2 * delta) for c in "xyz"]
    c12 = [d(f"p{b}{b}", f"e{a}") / (2 * delta) for a in "xyz" for b in "xyz" if a != b]
    c44 = [d(f"p{'xyz'[min(a, b)]}{'xyz'[max(a, b)]}", f"g{'xyz'[a]}{'xyz'[b]}") / (2 * gamma)
           for a, b in SHEARS]
    p0 = np.mean([res["ref"][c] for c in ("pxx", "pyy", "pzz")]) * BAR_TO_GPA
    f = lambda v: dict(mean=float(np.mean(v)), spread=float(np.ptp(v)))  # noqa: E731
    return dict(C11=f(c11), C12=f(c12), C44=f(c44), P0_GPa=float(p0),
                B_GPa=float((np.mean(c11) + 2 * np.mean(c12)) / 3))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--element", required=True, choices=sorted(LATTICES))
    ap.add_argument("--potential", required=True)
    ap.add_argument("--plugin", default=str(DEFAULT_PLUGIN))
    ap.add_argument("--precision", default="fp64")
    ap.add_argument("--lattices", nargs="+", default=None)
    ap.add_argument("--a", type=float, default=None, help="lattice constant (default classical a0)")
    ap.add_argument("--delta", type=float, default=0.005, help="normal strain")
    ap.add_argument("--gamma", type=float, default=0.01, help="engineering shear strain")
    ap.add_argument("--rattle", type=float, default=0.02, help="A r.m.s.; 0: perfect lattice")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--relax", action="store_true", help="relaxed-ion constants (minimize)")
    ap.add_argument("--out", type=pathlib.Path, default=None)
    ap.add_argument("--keep", type=pathlib.Path, default=None, help="keep LAMMPS dirs here")
    args = ap.parse_args()
    seeds = args.seeds if args.rattle else 1
    result = dict(settings={k: (str(v) if isinstance(v, pathlib.Path) else v)
                            for k, v in vars(args).items()})
    t0 = time.time()
    for lattice in args.lattices or LATTICES[args.element]:
        a = args.a or A0_CLASSICAL[(args.element, lattice)]
        reps = REPS[lattice]
        per_model = {}
        for model in ("classical", "edgeframe"):
            runs = []
            for seed in range(seeds):
                with tempfile.TemporaryDirectory() as tmp:
                    work = (args.keep / f"{model}-{lattice}-{seed}") if args.keep else pathlib.Path(tmp)
                    res = evaluate(model, args.element, lattice, a, reps, args.rattle, seed,
                                   args.delta, args.gamma, args.relax, args, work)
                c = constants(res, args.delta, args.gamma)
                runs.append(c)
                print(f"[{time.time() - t0:6.0f} s] {args.element} {lattice} {model:9s} pattern "
                      f"{seed}: C11 {c['C11']['mean']:7.1f} C12 {c['C12']['mean']:7.1f} C44 "
                      f"{c['C44']['mean']:7.1f} GPa (P0 {c['P0_GPa']:+.2f} GPa)", flush=True)
            mean = {k: float(np.mean([r[k]["mean"] for r in runs])) for k in ("C11", "C12", "C44")}
            mean["sd_over_patterns"] = {k: float(np.std([r[k]["mean"] for r in runs]))
                                        for k in ("C11", "C12", "C44")}
            mean["direction_spread"] = {k: float(np.mean([r[k]["spread"] for r in runs]))
                                        for k in ("C11", "C12", "C44")}
            mean["P0_GPa"] = float(np.mean([r["P0_GPa"] for r in runs]))
            mean["B_GPa"] = (mean["C11"] + 2 * mean["C12"]) / 3
            per_model[model] = dict(mean=mean, patterns=runs)
        result[lattice] = dict(a=a, atoms=len(BASES[lattice]) * reps ** 3, **per_model)
        c, m = per_model["classical"]["mean"], per_model["edgeframe"]["mean"]
        kind = "relaxed-ion" if args.relax else "clamped-ion"
        print(f"\n{args.element} {lattice}, a = {a} A, {kind}, rattle {args.rattle} A x {seeds}:")
        print(f"  {'':10s} {'C11':>8s} {'C12':>8s} {'C44':>8s} {'B':>8s} {'P0':>7s}  (GPa)")
        for name, v in (("classical", c), ("edgeframe", m)):
            print(f"  {name:10s} {v['C11']:8.1f} {v['C12']:8.1f} {v['C44']:8.1f} {v['B_GPa']:8.1f} "
                  f"{v['P0_GPa']:+7.2f}")
        print("  error     " + " ".join(f"{100 * (m[k] / c[k] - 1):+7.1f}%" for k in
                                        ("C11", "C12", "C44", "B_GPa")))
        print(f"  edgeframe sd over patterns: " + ", ".join(
            f"{k} {v:.1f}" for k, v in m["sd_over_patterns"].items()) + "; spread over "
              "directions: " + ", ".join(f"{k} {v:.1f}" for k, v in m["direction_spread"].items()),
              flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
