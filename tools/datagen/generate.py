#!/usr/bin/env python3
"""Make the reference data sets of doc/data.md with LAMMPS' classical potentials.

    source /opt/edgeframe-deps/env-cpu.sh
    $EDGEFRAME_PYTHON tools/datagen/generate.py --out tools/data            # C and Cu
    $EDGEFRAME_PYTHON tools/datagen/generate.py --out /tmp/x --check tools/data

Runs every recipe of recipes.py one after the other (one `lmp` process, one thread at a time),
with a progress bar, and writes per element
  <out>/<element>.npz        frames (see FIELDS below), float64
  <out>/<element>.json       the recipes, per-trajectory frame ranges and splits, provenance
--check DIR compares the freshly made arrays with those in DIR (bit for bit).
--append DIR keeps DIR's frames and runs only the recipes after the last one DIR holds (its
recipes must be the first ones of recipes.py, unchanged), e.g. after recipes were appended.
Recipes whose "md" has kind "static" are near-equilibrium configurations (datagen/static.py).
"""

import argparse
import datetime
import hashlib
import json
import pathlib
import subprocess
import sys
import time

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from datagen.lammps_driver import LMP, run_trajectory  # noqa: E402
from datagen.recipes import POTENTIALS, RECIPES  # noqa: E402
from datagen.static import run_static  # noqa: E402

VERSION = "1.0.0"
# Per-frame arrays (F frames, A = total atoms): n_atoms [F], cell [F, 3, 3] (rows, A),
# energy [F] eV, virial [F, 3, 3] eV, temperature [F] K (instantaneous), traj [F] index into
# the recipe list; per-atom arrays positions [A, 3] A and forces [A, 3] eV/A, frames
# concatenated in order (frame f owns rows offset[f]:offset[f]+n_atoms[f]).
FIELDS = ["n_atoms", "cell", "energy", "virial", "temperature", "traj", "positions", "forces"]


def lammps_version():
    out = subprocess.run([LMP, "-h"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Large-scale Atomic/Molecular Massively Parallel Simulator" in line:
            return line.strip()
    return "unknown"


def generate(element, only=None, first_recipe=0):
    """Frames of recipes[first_recipe:] (trajectory indices counted from there)."""
    recipes = RECIPES[element]()
    if only:
        recipes = [r for r in recipes if any(o in r["name"] for o in only)]
    recipes = recipes[first_recipe:]
    pot = POTENTIALS[element]
    cols = {k: [] for k in FIELDS}
    trajs = []
    bar = tqdm(recipes, desc=f"{element} trajectories", unit="traj", dynamic_ncols=True)
    start = time.time()
    for t, rec in enumerate(bar, start=first_recipe):
        bar.set_postfix_str(rec["name"])
        frames = run_static(rec, pot) if rec["md"].get("kind") == "static" else \
            run_trajectory(rec, pot)
        first = sum(len(c) for c in cols["energy"])
        for fr in frames:
            n = len(fr["positions"])
            cols["n_atoms"].append([n])
            cols["cell"].append(fr["cell"][None])
            cols["energy"].append([fr["energy"]])
            cols["virial"].append(fr["virial"][None])
            cols["temperature"].append([fr["temperature"]])
            cols["traj"].append([t])
            cols["positions"].append(fr["positions"])
            cols["forces"].append(fr["forces"])
        trajs.append(dict(rec, frames=[first, first + len(frames)], n_atoms=n))
    arrays = {k: np.concatenate(v).astype(np.int64 if k in ("n_atoms", "traj") else np.float64)
              for k, v in cols.items()}
    meta = dict(element=element, potential=pot, generator=f"tools/datagen/generate.py {VERSION}",
                lammps=lammps_version(), date=datetime.date.today().isoformat(),
                seconds=round(time.time() - start, 1), units="metal",
                virial_convention="W = -sum_e r_e (x) dE/dr_e (eV) = LAMMPS pressure virial "
                                  "* V / nktv2p", fields=FIELDS, trajectories=trajs)
    return arrays, meta


def append(element, olddir):
    """The data set in olddir extended by the recipes it does not hold yet."""
    old = dict(np.load(olddir / f"{element}.npz"))
    old_meta = json.loads((olddir / f"{element}.json").read_text())
    have = old_meta["trajectories"]
    recipes = RECIPES[element]()
    for k, t in enumerate(have):
        want = json.loads(json.dumps(recipes[k])) if k < len(recipes) else None
        if want is None or {key: t.get(key) for key in want} != want:
            raise SystemExit(f"{olddir}/{element}.json: trajectory {k} ({t['name']}) is not recipe "
                             f"{k} of recipes.py; regenerate instead of appending")
    new, meta = generate(element, first_recipe=len(have))
    n_old = len(old["energy"])
    for t in meta["trajectories"]:
        t["frames"] = [t["frames"][0] + n_old, t["frames"][1] + n_old]
    arrays = {k: np.concatenate([old[k], new[k]]) for k in FIELDS}
    meta["trajectories"] = have + meta["trajectories"]
    meta["appended"] = dict(first_trajectory=len(have), first_frame=n_old, date=meta["date"],
                            lammps=meta["lammps"], seconds=meta["seconds"])
    for key in ("date", "lammps", "seconds"):
        meta[key] = old_meta[key]
    if "appended" in old_meta:
        # every earlier append, newest first (older data sets hold one record, not a list)
        before = old_meta.get("appended_before", [])
        meta["appended_before"] = [old_meta["appended"]] + (before if isinstance(before, list) else [before])
    return arrays, meta


def digest(arrays):
    h = hashlib.sha256()
    for k in FIELDS:
        h.update(np.ascontiguousarray(arrays[k]).tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--elements", nargs="+", default=["C", "Cu"], choices=sorted(RECIPES))
    ap.add_argument("--only", nargs="*", help="substrings of recipe names (debugging)")
    ap.add_argument("--check", type=pathlib.Path, help="compare with the data set in this dir")
    ap.add_argument("--append", type=pathlib.Path,
                    help="keep this dir's frames, run only the recipes it does not hold yet")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    ok = True
    for el in args.elements:
        if args.append:
            arrays, meta = append(el, args.append)
        else:
            arrays, meta = generate(el, args.only)
        meta["sha256_arrays"] = digest(arrays)
        np.savez_compressed(args.out / f"{el}.npz", **arrays)
        (args.out / f"{el}.json").write_text(json.dumps(meta, indent=1) + "\n")
        n = len(arrays["energy"])
        print(f"{el}: {n} frames, {len(arrays['positions'])} atoms, "
              f"{meta['seconds']} s, sha256 {meta['sha256_arrays'][:16]}")
        if args.check:
            ref = np.load(args.check / f"{el}.npz")
            same = all(np.array_equal(ref[k], arrays[k]) for k in FIELDS)
            print(f"{el}: {'identical to' if same else 'DIFFERS from'} {args.check}")
            ok &= same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
