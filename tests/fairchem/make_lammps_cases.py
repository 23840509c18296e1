"""Writes what the LAMMPS-level comparison with fairchem needs (tests/lammps/test_fairchem_v2.py),
run in the fairchem venv:  python make_lammps_cases.py OUT_DIR

OUT_DIR/uma.pt (a small random fairchem checkpoint of UMA-S 1.2's structure), OUT_DIR/uma.safetensors
(converted by tools/convert_fairchem.py), and OUT_DIR/<case>.npz per case: the structure and
fairchem's own predictions for it in fp64 and fp32 (energy, forces, stress, per-atom energies).
Also two models of the other degrees, the same way with a few cases each: OUT_DIR/esen_l3.*
(eSEN's structure at lmax 3, as eSEN-30M) and OUT_DIR/uma_m.* (UMA-M 1.1's: lmax 4, one head, no
charge balancing), cases <model>-<case>.npz."""

import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))
sys.path.insert(0, str(HERE))

import convert_fairchem  # noqa: E402
from fairchem_side import fairchem_predict, predict_unit, structure  # noqa: E402
from small_models import esen_like, uma_like, uma_m_like, write_checkpoint  # noqa: E402

# (case, structure, task, charge, spin); spin None: the task's default (fairchem's).
CASES = [("diamond", "diamond", "omat", 0, None), ("bcc_cu", "bcc_cu", "omat", 0, None),
         ("fcc_cu", "fcc_cu", "oc20", 0, None), ("mgo", "mgo", "omat", 0, None),
         ("triclinic", "triclinic", "omat", 0, None), ("molecule", "molecule", "omol", 1, 2),
         # diamond with atoms 1-4 made Cu: the composition-change test's second run
         ("diamond_cu4", "diamond", "omat", 0, None)]


# The lmax 3 and lmax 4 models: fewer cases (the engine's paths of those degrees are what they add).
OTHER_MODELS = {
    "esen_l3": (lambda: esen_like(lmax=3, layers=3), 3, 0.984507,
                [("diamond", "diamond", "omol", 0, None), ("molecule", "molecule", "omol", 0, None)]),
    "uma_m": (lambda: uma_m_like(), 4, 1.423,
              [("diamond", "diamond", "omat", 0, None), ("mgo", "mgo", "omat", 0, None),
               ("molecule", "molecule", "omol", 1, 2)]),
}


def write_model(out, stem, config_and_datasets, seed, rmsd, cases, prefix=""):
    ckpt = write_checkpoint(out / f"{stem}.pt", *config_and_datasets, seed=seed, rmsd=rmsd)
    if convert_fairchem.main([str(ckpt), str(out / f"{stem}.safetensors")]) != 0:
        raise SystemExit(f"conversion of {stem} failed")
    units = {"fp64": predict_unit(ckpt, torch.float64), "fp32": predict_unit(ckpt, torch.float32)}
    for case, name, task, charge, spin in cases:
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
        np.savez(out / f"{prefix}{case}.npz", **rec)
        print(f"make_lammps_cases: {prefix}{case}: {len(atoms)} atoms, fairchem fp64 energy "
              f"{rec['fp64_energy']:.10f} eV", flush=True)


def main(out):
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_model(out, "uma", uma_like(), 1, 1.342, CASES)
    for stem, (make, seed, rmsd, cases) in OTHER_MODELS.items():
        write_model(out, stem, make(), seed, rmsd, cases, prefix=f"{stem}-")


if __name__ == "__main__":
    main(sys.argv[1])
