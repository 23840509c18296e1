"""Compare a LAMMPS dump (id xu yu zu, every step) with a reference trajectory JSON written by
reference_md.py. Exit status 0 when every step agrees within --tol Angstrom."""
import argparse
import json
import sys

import numpy as np


def read_frames(path):
    frames = []
    for block in open(path).read().split("ITEM: TIMESTEP")[1:]:
        rows = block.strip().splitlines()
        start = next(i for i, r in enumerate(rows) if r.startswith("ITEM: ATOMS")) + 1
        data = np.array([[float(x) for x in r.split()] for r in rows[start:]])
        frames.append(data[np.argsort(data[:, 0])][:, 1:4])
    return frames


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("dump")
    ap.add_argument("reference")
    ap.add_argument("--tol", type=float, default=1e-8, help="Angstrom (fp64 runs: 1e-8)")
    args = ap.parse_args()
    ref = json.load(open(args.reference))["frames"]
    got = read_frames(args.dump)
    if len(got) != len(ref):
        print(f"compare: {len(got)} frames in {args.dump}, {len(ref)} in {args.reference}")
        return 1
    worst = 0.0
    for step, (a, b) in enumerate(zip(got, ref)):
        dev = float(np.abs(a - np.array(b["positions"])).max())
        worst = max(worst, dev)
        print(f"step {step:3d}  max |x_lammps - x_reference| = {dev:.3e} A")
    ok = worst <= args.tol
    print(f"compare: {'PASS' if ok else 'FAIL'}: worst deviation {worst:.3e} A (tolerance {args.tol:.1e} A)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
