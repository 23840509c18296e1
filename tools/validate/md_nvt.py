#!/usr/bin/env python3
"""NVT stability of a potential in LAMMPS (the edgeframe plugin), with the classical run beside it.

    source $(scripts/bootstrap.sh --print-env)
    $EDGEFRAME_PYTHON tools/validate/md_nvt.py --element C --potential potentials/C-diamond-v2.safetensors \
        --lattice diamond --reps 3 --temps 300 1500 --steps 2000 --dt 0.001
    $EDGEFRAME_PYTHON tools/validate/md_nvt.py --element Cu --potential potentials/Cu-v2.safetensors \
        --lattice fcc --reps 3 --temps 300 1500 --steps 2000 --dt 0.001 [--classical] [--out md.json]

Crystal at the classical relaxed lattice constant, rattled by 0.02 A (the perfect lattice is a
singular point of the model's RMS norm, doc/model.md "Known problems"), velocities drawn at 2T
(half goes into potential energy), Nose-Hoover NVT at T (`fix nvt`, damping 100 dt). Thermo every
--thermo steps, positions dumped every --dump steps. Reported per run: steps done, wall time per
step, mean and s.d. of T over the second half, potential energy per atom (mean over the second
half, and its drift: slope of a straight-line fit over the second half, meV/atom/ps), drift of
the NVT conserved quantity (etotal + ecouple, meV/atom/ps, whole run after the first 10 %),
closest interatomic distance over all dumped frames, and the verdict: stable = every thermo
value finite, T within a factor 2 of the target over the second half and no pair closer than
--min-dist A (default: 0.6 x the nearest-neighbour distance). --classical repeats the run with
the classical potential (same seed and start) for reference values of T, E_pot and distances.
"""
import argparse
import json
import pathlib
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from lmp import A0_CLASSICAL, DEFAULT_PLUGIN, header, pair_block, run_lmp  # noqa: E402

NN = {"diamond": 3 ** 0.5 / 4, "fcc": 2 ** -0.5, "bcc": 3 ** 0.5 / 2}   # x a


def md_input(args, model, temp, a):
    th, dump = args.thermo, args.dump
    return (header(model, args.plugin)
            + f"lattice {args.lattice} {a}\nregion box block 0 {args.reps} 0 {args.reps} 0 "
            f"{args.reps}\ncreate_box 1 box\ncreate_atoms 1 box\n"
            + pair_block(model, args.element, args.potential, args.precision)
            + f"displace_atoms all random 0.02 0.02 0.02 {args.seed} units box\n"
            f"neighbor 1.0 bin\n"
            f"velocity all create {2 * temp} {args.seed + 1} mom yes rot yes dist gaussian\n"
            f"timestep {args.dt}\n"
            f"fix nvt all nvt temp {temp} {temp} {100 * args.dt}\n"
            f"thermo_style custom step time temp pe etotal ecouple econserve press\n"
            f"thermo_modify format float %.10g norm no flush yes\n"
            f"thermo {th}\n"
            f"dump d all custom {dump} dump.txt id x y z\n"
            f"dump_modify d sort id format float %.8g\n"
            f"run {args.steps}\n")


def parse_thermo(log):
    rows, cols, on = [], None, False
    for line in log.splitlines():
        w = line.split()
        if w[:2] == ["Step", "Time"]:
            cols, on = w, True
            continue
        if on:
            if w and w[0] == "Loop":
                on = False
                continue
            try:
                rows.append([float(v) for v in w])
            except ValueError:
                continue
    return cols, np.array(rows)


def min_distance(dump_path, box):
    """Closest pair over all frames (orthogonal box, minimum image), and per-frame minima."""
    lines = pathlib.Path(dump_path).read_text().splitlines()
    mins, k = [], 0
    while k < len(lines):
        n = int(lines[k + 3])
        x = np.array([[float(v) for v in l.split()[1:4]] for l in lines[k + 9:k + 9 + n]])
        d = x[:, None, :] - x[None, :, :]
        d -= box * np.round(d / box)
        r = np.sqrt((d ** 2).sum(-1))
        r[np.diag_indices(n)] = np.inf
        mins.append(float(r.min()) if np.all(np.isfinite(x)) else float("nan"))
        k += 9 + n
    return mins


def one_run(args, model, temp, a, work):
    tag = f"{model} {args.element} {args.lattice} {temp:g} K"
    every = max(args.thermo, args.steps // 10 // args.thermo * args.thermo)

    def echo(line):
        w = line.split()
        if len(w) == 8 and w[0].isdigit() and int(w[0]) % every == 0:
            return f"step {w[0]} T {float(w[2]):.0f} K pe {float(w[3]):.3f} eV"
        if "ERROR" in line or "nan" in line.lower():
            return line.strip()
        return None
    t0 = time.time()
    try:
        log = run_lmp(md_input(args, model, temp, a), work, tag=tag, echo=echo)
        error = None
    except RuntimeError as err:
        log = (work / "log.lammps").read_text() if (work / "log.lammps").exists() else ""
        error = str(err)[-600:]
    wall = time.time() - t0
    cols, th = parse_thermo(log)
    natoms = args.reps ** 3 * {"diamond": 8, "fcc": 4, "bcc": 2}[args.lattice]
    out = dict(model=model, temperature_target=temp, atoms=natoms, dt_ps=args.dt, error=error)
    if th.size == 0:
        out["stable"] = False
        return out
    c = {name: th[:, i] for i, name in enumerate(cols)}
    t_ps = c["Time"]
    half = t_ps >= t_ps[-1] / 2
    late = t_ps >= t_ps[-1] / 10
    slope = lambda y, sel: float(np.polyfit(t_ps[sel], y[sel], 1)[0]) if sel.sum() > 2 else float("nan")  # noqa
    box = args.reps * a
    mins = min_distance(work / "dump.txt", box) if (work / "dump.txt").exists() else []
    finite = bool(np.all(np.isfinite(th)))
    steps_done = int(c["Step"][-1])
    out.update(steps=steps_done, ps=float(t_ps[-1]), wall_s=round(wall, 1),
               s_per_step=wall / max(1, steps_done),
               T_mean=float(c["Temp"][half].mean()), T_sd=float(c["Temp"][half].std()),
               pe_mean_eV_atom=float(c["PotEng"][half].mean() / natoms),
               pe_sd_meV_atom=float(1e3 * c["PotEng"][half].std() / natoms),
               pe_drift_meV_atom_ps=1e3 * slope(c["PotEng"] / natoms, half),
               econserve_drift_meV_atom_ps=1e3 * slope(c["Econserve"] / natoms, late),
               econserve_change_meV_atom=float(1e3 * (c["Econserve"][-1] - c["Econserve"][late][0])
                                               / natoms),
               min_dist_A=float(np.nanmin(mins)) if mins else float("nan"),
               min_dist_last_A=mins[-1] if mins else float("nan"), finite=finite)
    min_ok = args.min_dist or 0.6 * NN[args.lattice] * a
    out["stable"] = bool(error is None and finite and steps_done == args.steps
                         and 0.5 * temp < out["T_mean"] < 2 * temp and out["min_dist_A"] > min_ok)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--element", required=True, choices=["C", "Cu"])
    ap.add_argument("--potential", required=True)
    ap.add_argument("--plugin", default=str(DEFAULT_PLUGIN))
    ap.add_argument("--precision", default="fp32")
    ap.add_argument("--lattice", required=True, choices=sorted(NN))
    ap.add_argument("--a", type=float, default=None)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--temps", type=float, nargs="+", default=[300.0, 1500.0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--dt", type=float, default=0.001, help="ps")
    ap.add_argument("--thermo", type=int, default=10)
    ap.add_argument("--dump", type=int, default=100)
    ap.add_argument("--seed", type=int, default=4928459)
    ap.add_argument("--min-dist", type=float, default=None)
    ap.add_argument("--classical", action="store_true", help="also run the classical potential")
    ap.add_argument("--out", type=pathlib.Path, default=None)
    ap.add_argument("--keep", type=pathlib.Path, default=None, help="keep LAMMPS dirs here")
    args = ap.parse_args()
    a = args.a or A0_CLASSICAL[(args.element, args.lattice)]
    results = []
    models = ["edgeframe"] + (["classical"] if args.classical else [])
    for temp in args.temps:
        for model in models:
            with tempfile.TemporaryDirectory() as tmp:
                work = (args.keep / f"{model}-{args.lattice}-{temp:g}") if args.keep else pathlib.Path(tmp)
                work.mkdir(parents=True, exist_ok=True)
                r = one_run(args, model, temp, a, work)
            results.append(r)
            if "T_mean" in r:
                print(f"{model:9s} {args.element} {args.lattice} {r['atoms']} atoms {temp:6.0f} K: "
                      f"{r['steps']} steps x {1000 * args.dt:g} fs ({r['ps']:.2f} ps, "
                      f"{r['s_per_step']:.3f} s/step); T {r['T_mean']:.0f} +- {r['T_sd']:.0f} K; "
                      f"E_pot {r['pe_mean_eV_atom']:.4f} eV/atom (sd {r['pe_sd_meV_atom']:.1f}, "
                      f"drift {r['pe_drift_meV_atom_ps']:+.2f} meV/atom/ps); conserved-quantity "
                      f"drift {r['econserve_drift_meV_atom_ps']:+.2f} meV/atom/ps; closest pair "
                      f"{r['min_dist_A']:.3f} A; {'STABLE' if r['stable'] else 'NOT STABLE'}",
                      flush=True)
            else:
                print(f"{model} {temp} K: no thermo output; {r.get('error')}", flush=True)
    if args.out:
        args.out.write_text(json.dumps(dict(settings={k: str(v) for k, v in vars(args).items()},
                                            a=a, runs=results), indent=1) + "\n")


if __name__ == "__main__":
    main()
