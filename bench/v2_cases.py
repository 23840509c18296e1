#!/usr/bin/env python3
"""Case files for bench/edgeframe_bench's case mode with a model v2 potential (no fairchem
needed): the structures of the speed table of issue 24 (diamond 512 and 4096 atoms, bcc Cu 4394
atoms, rattled by 0.05 A), their candidate pairs within the model's r_cut, and a LAMMPS data file
of each (one atom type per element, in the order written to <tag>.elements).

    python3 bench/v2_cases.py --potential uma.safetensors --out DIR [--cases diamond512,bcc4394]
    python3 bench/v2_cases.py --potential uma.safetensors --out DIR --from-ref FAIRCHEM_REF_DIR

then  edgeframe_bench --case DIR/<tag>.case --potential uma.safetensors --precision tf32
Species in a case file are the potential's species indices: Z - 1 for model v2.
"""

import argparse
import json
import pathlib
import struct
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))
from edgeframe_ref import structures  # noqa: E402
from edgeframe_ref.elements import ELEMENTS  # noqa: E402
from edgeframe_ref.neighbors import neighbor_list  # noqa: E402
from edgeframe_ref.potential_io_v2 import read_potential_v2  # noqa: E402

CASES = {
    "diamond512": lambda: structures.diamond((4, 4, 4)),
    "bcc4394": lambda: structures.bcc((13, 13, 13)),
    "diamond4096": lambda: structures.diamond((8, 8, 8)),
    "bcc1024000": lambda: structures.bcc((80, 80, 80)),   # issue 26's million atoms (bench/v2_memory.sh)
}


def fairchem_structure(npz, ref_out):
    """The structure of one REF_DIR/NAME.npz (bench/fairchem_gpu_speed.py: positions, cell, pbc,
    symbols, in fairchem's frame) as edgeframe_ref Atoms, and its fp64 reference (energy, forces
    in the same frame and atom order as the case file) copied to ref_out where the npz holds one."""
    with np.load(npz) as z:
        atoms = structures.Atoms(np.array(z["positions"], dtype=np.float64), np.array(z["cell"], dtype=np.float64),
                                 tuple(bool(b) for b in z["pbc"]), [str(s) for s in z["symbols"]])
        if "fp64_forces" in z:
            np.savez(ref_out, energy=z["fp64_energy"], forces=z["fp64_forces"])
    if not np.allclose(atoms.cell, np.diag(np.diag(atoms.cell))):
        raise SystemExit(f"v2_cases: {npz}: the case data file is written for orthorhombic cells only")
    return atoms


def write_case(out, tag, atoms, r_cut):
    i, j, shift = neighbor_list(atoms.positions, atoms.cell, atoms.pbc, r_cut)
    pos = np.asarray(atoms.positions, dtype=np.float64)
    species = np.array([ELEMENTS.index(s) for s in atoms.symbols], dtype=np.int32)   # Z - 1
    shift_cart = shift.numpy().astype(np.float64) @ atoms.cell
    with open(out / f"{tag}.case", "wb") as fh:
        fh.write(b"EFCASE1\0" + struct.pack("<qq", len(pos), len(i)))
        fh.write(pos.astype("<f8").tobytes())
        fh.write(species.astype("<i4").tobytes())
        fh.write(i.numpy().astype("<i4").tobytes())
        fh.write(j.numpy().astype("<i4").tobytes())
        fh.write(shift_cart.astype("<f8").tobytes())
    elements = sorted(set(atoms.symbols))
    cell = atoms.cell
    lines = [f"edgeframe v2 case {tag}", "", f"{len(pos)} atoms", f"{len(elements)} atom types", "",
             f"0 {cell[0, 0]:.12f} xlo xhi", f"0 {cell[1, 1]:.12f} ylo yhi", f"0 {cell[2, 2]:.12f} zlo zhi",
             "", "Masses", ""] + [f"{t + 1} 1.0" for t in range(len(elements))] + ["", "Atoms # atomic", ""]
    lines += [f"{k + 1} {elements.index(s) + 1} {p[0]:.12f} {p[1]:.12f} {p[2]:.12f}"
              for k, (s, p) in enumerate(zip(atoms.symbols, pos))]
    (out / f"{tag}.data").write_text("\n".join(lines) + "\n")
    (out / f"{tag}.elements").write_text(" ".join(elements) + "\n")
    return len(pos), len(i) // 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--potential", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cases", default=None, help=f"comma list (default {','.join(CASES)}; with --from-ref every "
                    "structure of REF_DIR/cases.json)")
    ap.add_argument("--from-ref", default=None, metavar="REF_DIR",
                    help="the structures bench/fairchem_gpu_speed.py wrote (REF_DIR/NAME.npz), tagged NAME, "
                         "each with NAME.ref.npz: its fp64 reference forces where fairchem made them")
    args = ap.parse_args()
    cfg, _, _ = read_potential_v2(args.potential)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.from_ref:
        ref_dir = pathlib.Path(args.from_ref)
        names = args.cases.split(",") if args.cases else list(json.loads((ref_dir / "cases.json").read_text())["cases"])
        cases = {name: lambda name=name: fairchem_structure(ref_dir / f"{name}.npz", out / f"{name}.ref.npz")
                 for name in names}
    else:
        tags = args.cases.split(",") if args.cases else list(CASES)
        unknown = [t for t in tags if t not in CASES]
        if unknown:
            raise SystemExit(f"v2_cases: unknown cases {unknown}; known: {', '.join(CASES)}")
        cases = {tag: lambda tag=tag: structures.rattle(CASES[tag](), 0.05, seed=1) for tag in tags}
    for tag, make in cases.items():
        n, p = write_case(out, tag, make(), cfg.r_cut)
        print(f"v2_cases: {tag}: {n} atoms, {p} directed edges within {cfg.r_cut} A", flush=True)


if __name__ == "__main__":
    main()
