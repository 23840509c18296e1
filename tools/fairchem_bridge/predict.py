#!/usr/bin/env python
"""fairchem's own prediction on one of structures.py's structures, saved for comparison.

    python predict.py --checkpoint PATH --structure NAME[,NAME...|all] [--task TASK]
                      [--charge Q --spin S] [--dtype {float64,float32}] [--merge-mole {off,on}]
                      [--activation-checkpointing {off,on}] [--save-embedding]
                      (--out OUT.npz | --out-dir DIR)

Runs in the fairchem venv (scripts/bootstrap.sh: EDGEFRAME_FAIRCHEM_PYTHON). The prediction is
fairchem's user path: load_predict_unit(PATH, inference_settings, device="cpu") and
FAIRChemCalculator(unit, task_name=TASK) on the ase.Atoms, with

    InferenceSettings(tf32=False, activation_checkpointing=<off>, merge_mole=<--merge-mole>,
                      compile=False, external_graph_gen=False, internal_graph_gen_version=2,
                      execution_mode="general", base_precision_dtype=<--dtype>)

(fairchem's internal radius graph, no torch.compile, no Nitro).

--merge-mole off (the default) is fairchem's general unmerged path: UMA's experts are mixed in every
forward, one unit serves every structure, and float64 is float64 throughout. --merge-mole on merges
the experts for the structure's fixed composition, task, charge and spin, as fairchem's
high-precision and default presets do (a merged unit serves one composition, so every structure
gets a unit of its own). In fairchem-core 2.24.0 the merge rebuilds the backbone under torch's
float32 default dtype, so in float64 the merged expert weights and the rebuilt non-persistent
buffers (Gaussian offsets, norm degree weights, SO3 grids) are float32-rounded: on the UMA-S 1.2
checkpoint it moved the molecule's energy by 6e-9 relative and its forces by 6e-7 relative. Use
off for float64 references; eSEN (no experts) gives identical numbers either way.

--activation-checkpointing on trades time for memory (fairchem recomputes the edge blocks in the
backward): the same numbers to rounding (0 to 6e-16 seen); esen-30m-l3 on the 64-atom diamond
in float64 peaked at 3.7 GB instead of 17 GB and took about 2.5x as long.

Saved (OUT.npz, float64 unless noted; eV, Angstrom):
  energy []         fairchem's energy: rmsd * sum(head) + mean + sum of element references
  forces [N,3]      -dE/dx
  stress [3,3]      fairchem's stress = (1/V) dE/d(strain), symmetric; ASE's sign (positive =
                    tensile): LAMMPS' virial is W = -V * stress, its pressure P = -stress.
                    For the molecule (pbc False) V is its 30 A box and the value has no physical
                    meaning (stress_meaningful False).
  stress_voigt [6]  the calculator's ASE Voigt order xx yy zz yz xz xy
  energies [N]      per-atom energies, which fairchem's predict does not output: the head's
                    energy_block output per node (a forward hook in the same prediction) times
                    rmsd, plus mean / N, plus the atom's element reference; their sum equals
                    energy to 1e-12 relative (asserted)
  energy_net [], energy_refs []   the two parts of energy
  positions [N,3]   the positions fairchem used (wrapped into the cell, in --dtype, as float64)
  cell [3,3], pbc [3] (bool), numbers [N] (int), charge [], spin [] (int), task (str)
  mole_coefficients [64]  UMA only: fairchem's expert coefficients for this system
  node_embedding [N,(L+1)^2,C]  --save-embedding only: the backbone's output (after its final norm)
  settings_json (str)  the settings, versions, checkpoint, timings

Importable: predict(checkpoint, structure, ...) -> dict, or load_unit + run for several
predictions with one unit (unmerged MoLE only).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from structures import DEFAULT_SYSTEM, NAMES, structures  # noqa: E402

SUM_RTOL = 1e-12  # per-atom energies vs fairchem's energy: both sums run in float64 (fairchem's
#                   reduce_node_to_system accumulates in float64 in both dtypes), so they agree to
#                   rounding (seen: <= 3e-16 relative on the structures of structures.py)


def settings(dtype: str = "float64", merge_mole: bool = False, activation_checkpointing: bool = False):
    from fairchem.core.units.mlip_unit.api.inference import InferenceSettings

    return InferenceSettings(
        tf32=False, activation_checkpointing=activation_checkpointing, merge_mole=merge_mole, compile=False,
        external_graph_gen=False, internal_graph_gen_version=2, execution_mode="general",
        base_precision_dtype=dtype)


def load_unit(checkpoint: str, dtype: str = "float64", merge_mole: bool = False,
              activation_checkpointing: bool = False):
    """fairchem's predict unit on the CPU; returns (unit, seconds)."""
    from fairchem.core.units.mlip_unit import load_predict_unit

    t = time.perf_counter()
    unit = load_predict_unit(checkpoint, device="cpu",
                             inference_settings=settings(dtype, merge_mole, activation_checkpointing))
    return unit, time.perf_counter() - t


def _system(name: str, atoms, unit, task, charge, spin):
    valid = sorted(unit.dataset_to_tasks)
    if task is None:
        default = DEFAULT_SYSTEM[name][0]
        task = default if default in valid else valid[0] if len(valid) == 1 else None
        if task is None:
            raise ValueError(f"{name}: give --task (the checkpoint has: {', '.join(valid)})")
    if task not in valid:
        raise ValueError(f"task '{task}' is not in the checkpoint (it has: {', '.join(valid)})")
    # fairchem's defaults (validate_uma_atoms_data): charge 0, spin 1 for omol and 0 otherwise.
    charge = atoms.info.get("charge", 0) if charge is None else charge
    spin = atoms.info.get("spin", 1 if task == "omol" else 0) if spin is None else spin
    atoms.info["charge"], atoms.info["spin"] = int(charge), int(spin)
    return task


def run(unit, name: str, task: str | None = None, charge: int | None = None,
        spin: int | None = None, save_embedding: bool = False) -> dict:
    """One prediction with fairchem's calculator; returns the arrays listed in the docstring."""
    from fairchem.core.calculate.ase_calculator import FAIRChemCalculator

    atoms = structures(name)
    task = _system(name, atoms, unit, task, charge, spin)
    hydra_model = unit.model.module
    backbone = hydra_model.backbone  # the MoE backbone; merging replaces it, this keeps the coefficients
    captured = {}

    def keep_output(_module, _inputs, output):
        captured.setdefault("node_energy", []).append(output.detach())

    def keep_embedding(_module, inputs, _output):  # a head's inputs: (data, backbone output)
        captured.setdefault("node_embedding", []).append(inputs[1]["node_embedding"].detach())

    # Hooks on the heads, which merging keeps (it replaces the backbone).
    heads = list(hydra_model.output_heads.values())
    handles = [getattr(h, "head", h).energy_block.register_forward_hook(keep_output) for h in heads]
    if save_embedding:
        handles.append(heads[0].register_forward_hook(keep_embedding))
    calc = FAIRChemCalculator(unit, task_name=task)
    atoms.calc = calc
    t = time.perf_counter()
    try:
        energy = atoms.get_potential_energy()
        forces = atoms.get_forces()
        stress = atoms.get_stress(voigt=False) if "stress" in calc.implemented_properties else None
    finally:
        for h in handles:
            h.remove()
    predict_s = time.perf_counter() - t
    if len(captured.get("node_energy", [])) != 1:
        raise RuntimeError("the energy head ran %d times in one prediction (expected once; did the "
                           "unit fall back and reload?)" % len(captured.get("node_energy", [])))
    if unit.model.module is not hydra_model:
        raise RuntimeError("fairchem reloaded the model during the prediction (a fallback)")

    data = calc.a2g(atoms)  # what the calculator gave the predictor: wrapped, in the unit's dtype
    numbers = data.atomic_numbers.numpy().astype(np.int64)
    energy_task = next(t for t in unit.dataset_to_tasks[task] if t.property == "energy")
    rmsd = energy_task.normalizer.rmsd.double()
    mean = energy_task.normalizer.mean.double()
    node = captured["node_energy"][0].reshape(-1).double()
    refs = torch.zeros(len(numbers), dtype=torch.float64)
    if energy_task.element_references is not None:
        refs = energy_task.element_references.element_references.double()[torch.from_numpy(numbers)]
    energies = node * rmsd + mean / len(numbers) + refs
    e_sum = float(energies.sum())
    if not abs(e_sum - energy) <= SUM_RTOL * max(abs(energy), 1.0):
        raise AssertionError(f"{name}: per-atom energies sum to {e_sum!r}, fairchem's energy is "
                             f"{energy!r} (relative {abs(e_sum - energy) / abs(energy):.2e})")

    out = {
        "energy": np.float64(energy),
        "forces": np.asarray(forces, dtype=np.float64),
        "stress": (np.asarray(stress, dtype=np.float64) if stress is not None
                   else np.full((3, 3), np.nan)),
        "stress_voigt": (np.asarray(calc.results["stress"], dtype=np.float64) if stress is not None
                         else np.full(6, np.nan)),
        "energies": energies.numpy(),
        "energy_net": np.float64(float((node * rmsd).sum() + mean)),
        "energy_refs": np.float64(float(refs.sum())),
        "positions": data.pos.double().numpy(),
        "cell": data.cell.double().reshape(3, 3).numpy(),
        "pbc": data.pbc.reshape(3).numpy().astype(bool),
        "numbers": numbers,
        "charge": np.int64(atoms.info["charge"]),
        "spin": np.int64(atoms.info["spin"]),
        "task": np.array(task),
    }
    coeffs = getattr(getattr(backbone, "global_mole_tensors", None), "expert_mixing_coefficients", None)
    if coeffs is not None:  # UMA (merging sets the backbone's num_experts to 0, not these)
        out["mole_coefficients"] = coeffs.detach().double().reshape(-1).numpy()
    if save_embedding:
        out["node_embedding"] = captured["node_embedding"][-1].double().numpy()
    for key in ("energy", "forces", "energies"):
        if not np.all(np.isfinite(out[key])):
            raise RuntimeError(f"{name}: fairchem's {key} is not finite")

    import fairchem.core

    meta = {
        "structure": name, "task": task, "charge": int(out["charge"]), "spin": int(out["spin"]),
        "natoms": len(numbers),
        "inference_settings": {k: (str(v).replace("torch.", "") if isinstance(v, torch.dtype)
                                   else sorted(v) if isinstance(v, set)
                                   else getattr(v, "value", v))
                               for k, v in dataclasses.asdict(unit.inference_settings).items()},
        "device": "cpu", "torch_num_threads": torch.get_num_threads(),
        "fairchem_core": fairchem.core.__version__, "torch": torch.__version__,
        "model_id": getattr(hydra_model, "model_id", None),
        "stress_convention": "stress = (1/V) dE/d(strain) (ASE sign, positive = tensile), eV/A^3; "
                             "LAMMPS virial W = -V stress",
        "stress_meaningful": bool(out["pbc"].all()),
        "per_atom_energy": "energy_block(node) * rmsd + mean/N + element_reference[Z]; sum checked "
                           f"against fairchem's energy to {SUM_RTOL:g} relative",
        "per_atom_sum_relative_difference": abs(e_sum - energy) / max(abs(energy), 1.0),
        "predict_s": predict_s,
    }
    out["_meta"] = meta
    return out


def predict(checkpoint: str, structure: str, task: str | None = None, charge: int | None = None,
            spin: int | None = None, dtype: str = "float64", merge_mole: bool = False,
            save_embedding: bool = False, out: str | None = None, unit=None,
            unit_load_s: float | None = None, activation_checkpointing: bool = False) -> dict:
    """Predict one structure with fairchem (loading its predict unit unless one is given, with
    the seconds it took to load), optionally save OUT.npz."""
    shared = unit is not None
    if unit is None:
        unit, unit_load_s = load_unit(checkpoint, dtype, merge_mole, activation_checkpointing)
    result = run(unit, structure, task, charge, spin, save_embedding)
    result["_meta"].update({"checkpoint": os.path.abspath(checkpoint), "load_s": unit_load_s,
                            "unit_shared_with_other_structures": shared,
                            "checkpoint_sha256": _recorded_sha(checkpoint)})
    if out is not None:
        save(result, out)
    return result


def _recorded_sha(checkpoint: str) -> str | None:
    try:
        with open(checkpoint + ".json") as f:
            return json.load(f).get("sha256")
    except (OSError, ValueError):
        return None


def save(result: dict, out: str) -> None:
    arrays = {k: v for k, v in result.items() if not k.startswith("_")}
    arrays["settings_json"] = np.array(json.dumps(result["_meta"], sort_keys=True))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    np.savez(out, **arrays)


def summary(result: dict) -> str:
    m = result["_meta"]
    f = np.linalg.norm(result["forces"], axis=1)
    return (f"{m['structure']:<10} task {m['task']:<5} q {m['charge']:+d} s {m['spin']} N {m['natoms']:>2}"
            f"  E {float(result['energy']):14.8f} eV (net {float(result['energy_net']):11.6f})"
            f"  |F| max {f.max():.4f} rms {np.sqrt((f ** 2).mean()):.4f} eV/A"
            f"  |stress| max {np.nanmax(np.abs(result['stress'])):.3e} eV/A^3"
            + (f"  load {m['load_s']:.1f} s" if m.get("load_s") and not m.get("unit_shared_with_other_structures") else "")
            + f"  predict {m['predict_s']:.2f} s")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--structure", required=True, help=f"one of {', '.join(NAMES)}, a comma list, or all")
    ap.add_argument("--task", default=None, help="fairchem task (default: the structure's, see structures.py)")
    ap.add_argument("--charge", type=int, default=None)
    ap.add_argument("--spin", type=int, default=None, help="spin multiplicity, as fairchem takes it")
    ap.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    ap.add_argument("--merge-mole", choices=("off", "on"), default="off",
                    help="off: exact float64 (default); on: fairchem's merged experts (see above)")
    ap.add_argument("--activation-checkpointing", choices=("off", "on"), default="off",
                    help="on: less memory, more time, the same numbers to rounding")
    ap.add_argument("--save-embedding", action="store_true")
    ap.add_argument("--out", help="OUT.npz (one structure)")
    ap.add_argument("--out-dir", help="directory for NAME.npz (several structures)")
    args = ap.parse_args(argv)
    names = list(NAMES) if args.structure == "all" else args.structure.split(",")
    bad = [n for n in names if n not in NAMES]
    if bad:
        ap.error(f"--structure: unknown {bad} (valid: {', '.join(NAMES)}, all)")
    if (args.out is None) == (args.out_dir is None) or (args.out and len(names) > 1):
        ap.error("give --out for one structure or --out-dir for several")
    merge, ac = args.merge_mole == "on", args.activation_checkpointing == "on"
    unit, load_s = None, None
    if not merge and len(names) > 1:  # one unmerged unit serves every structure
        unit, load_s = load_unit(args.checkpoint, args.dtype, merge, ac)
        print(f"loaded {args.checkpoint} ({args.dtype}, merge_mole off) in {load_s:.1f} s", flush=True)
    for name in names:
        out = args.out or os.path.join(args.out_dir, f"{name}.npz")
        result = predict(args.checkpoint, name, args.task, args.charge, args.spin, args.dtype,
                         merge, args.save_embedding, out, unit=unit, unit_load_s=load_s,
                         activation_checkpointing=ac)
        print(summary(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
