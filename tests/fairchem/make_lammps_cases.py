"""Writes what the LAMMPS-level comparison with fairchem needs (tests/lammps/test_fairchem_v2.py),
run in the fairchem venv:  python make_lammps_cases.py OUT_DIR

OUT_DIR/uma.pt (a small random fairchem checkpoint of UMA-S 1.2's structure), OUT_DIR/uma.safetensors
(converted by tools/convert_fairchem.py), and OUT_DIR/<case>.npz per case: the structure and
fairchem's own predictions for it in fp64 and fp32 (energy, forces, stress, per-atom energies)."""

import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))
sys.path.insert(0, str(HERE))

import convert_fairchem  # noqa: E402
from fairchem_side import fairchem_predict, predict_unit, structure  # noqa: E402
from small_models import uma_like, write_checkpoint  # noqa: E402

# (case, structure, task, charge, spin); spin None: the task's default (fairchem's).
CASES = [("diamond", "diamond", "omat", 0, None), ("bcc_cu", "bcc_cu", "omat", 0, None),
         ("fcc_cu", "fcc_cu", "oc20", 0, None), ("mgo", "mgo", "omat", 0, None),
         ("triclinic", "triclinic", "omat", 0, None), ("molecule", "molecule", "omol", 1, 2),
         # diamond with atoms 1-4 made Cu: the composition-change test's second run
         ("diamond_cu4", "diamond", "omat", 0, None)]


def main(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = write_checkpoint(out / "uma.pt", *uma_like(), seed=1)
    if convert_fairchem.main([str(ckpt), str(out / "uma.safetensors")]) != 0:
        raise SystemExit("conversion failed")
    units = {"fp64": predict_unit(ckpt, torch.float64), "fp32": predict_unit(ckpt, torch.float32)}
    for case, name, task, charge, spin in CASES:
        atoms = structure(name)
        if case == "diamond_cu4":
            atoms.symbols[:4] = "Cu"
        rec = dict(positions=atoms.positions, cell=np.array(atoms.cell), pbc=np.array(atoms.pbc),
                   symbols=np.array(atoms.get_chemical_symbols()), task=task, charge=charge,
                   spin=-1 if spin is None else spin)
        for prec, unit in units.items():
            ref = fairchem_predict(unit, atoms, task, charge, spin)
            for key, value in ref.items():
                if value is not None:
                    rec[f"{prec}_{key}"] = np.asarray(value, dtype=np.float64)
        np.savez(out / f"{case}.npz", **rec)
        print(f"make_lammps_cases: {case}: {len(atoms)} atoms, fairchem fp64 energy "
              f"{rec['fp64_energy']:.10f} eV", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
