#!/usr/bin/env python3
"""fairchem-core 2.24.0's own predict paths, timed on a random-weight model of UMA-S 1.2's
released structure at full size, plus what a LAMMPS comparison on the same structures needs.

On the GPU machine, with fairchem installed from the carried wheels (bench/gpu-session.md,
"fairchem on the device"):

    bash .device/fairchem-wheels/INSTALL.sh                  # -> /tmp/fcpkgs
    PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/fcpkgs:$PWD/tools:$PWD/tests/fairchem \
        python3 bench/fairchem_gpu_speed.py --workdir /tmp/fcspeed --out $OUT/fairchem-speed.jsonl

On a CPU, as a smoke test (a small model, small structures; CUDA-only paths are skipped):

    $EDGEFRAME_FAIRCHEM_PYTHON bench/fairchem_gpu_speed.py --device cpu --small --steps 2

What it does, in order (each step in try/except: a failure prints its error and the rest runs;
`--budget` seconds after the start, whatever is left is skipped with a record saying so):
1. A fairchem inference checkpoint from tests/fairchem/small_models.py: uma_like(experts=64,
   lmax=2, mmax=2, layers=4, channels=128, hidden=128, edge=128, gaussians=32, cutoff=6.0)
   (UMA-S 1.2's backbone, 64 experts, charge balancing, per-dataset heads; random weights) and
   write_checkpoint; then tools/convert_fairchem.py into an edgeframe v2 file (fp32 storage).
   `--reuse` keeps both when WORKDIR/build.json records the same model.
2. The structures, rattled 0.05 A with fixed seeds, positions and cell rounded to float32 values
   (as tests/fairchem/fairchem_side.py does, so that both codes read the same input): diamond
   512 (a 3.567 A, 4x4x4 cubic cells), bcc Cu 4394 (a 2.87 A, 13x13x13), diamond 4096 (8x8x8).
   For each: REF_DIR/NAME.data (tests/lammps/reference_case.py write_data; it rotates the cell
   into LAMMPS' frame and returns Q) and REF_DIR/NAME.npz (the structure, Q, elements in
   pair_coeff order; the keys of tests/fairchem/make_lammps_cases.py). For diamond 512 also
   fairchem's "general" predictions in fp64 and fp32 (unmerged experts, tf32 off): energy,
   forces, stress, per-atom energies, as fp64_* / fp32_* in the npz (the arrays
   tests/lammps/test_fairchem_v2.py check() compares; forces in LAMMPS' frame are F @ Q.T).
   With --fp64-all the fp64 predictions of every structure (the first keeps its fp32 one too).
3. Per (path, structure) one JSON line, to stdout (prefixed "RESULT ") and to --out (jsonl):
   fairchem's predict unit from load_predict_unit(ckpt, inference_settings, device); timed is
   unit.predict(data) on one AtomicData built once by AtomicData.from_ase as FAIRChemCalculator
   builds it (task omat); fairchem builds the radius graph itself inside every predict (otf_graph,
   internal graph generation v2, as a user has it); energy, forces and stress are predicted; after
   the first call the data lives on the device, so a timed step holds no host-device copy and
   its outputs stay on the device. 3 warm-up steps, then the median of --steps steps, each closed
   by torch.cuda.synchronize(); torch.cuda.max_memory_allocated per (path, structure). One unit
   serves the structures of one composition (the two diamonds), a new one the next.
   Paths (all with merge_mole=True, activation_checkpointing=False, compile=False, fp32):
     fast_gpu_tf32, fast_gpu_fp32          execution_mode umas_fast_gpu (Triton), tf32 on / off
     fast_pytorch_tf32, fast_pytorch_fp32  execution_mode umas_fast_pytorch
     general_tf32, general_fp32            execution_mode general
     nitro           UMA Nitro (InferenceSettings nitro=True, tf32=True, execution_mode None).
                     fairchem admits only model_id UMA-S-1.2.1 checkpoints on an MD5 allowlist:
                     the record first gives fairchem's own refusal of the UMA-S 1.2 checkpoint;
                     then (unless --no-nitro-patch) it runs a copy with model_id UMA-S-1.2.1
                     (the EMA weights; in fairchem 2.24.0's model code model_id gates only the
                     composition average's include_self) whose MD5 this process adds to
                     Nitro's allowlist (bench only; fairchem is not modified), with the
                     kernels Nitro picks for this GPU (on sm90: CuTe GEMMs from
                     nvidia-cutlass-dsl 4.7.1: its module `cutlass` is found only where
                     nvidia_cutlass_dsl/dsl_packages is on the path, scripts/pack_cutlass_dsl.sh;
                     without it the record holds the import error).
     nitro_portable  the same in a child process in which torch reports CUDA capability 8.0
                     while Nitro's module is imported, so that Nitro picks its portable path
                     (Triton kernels, IEEE fp32 GEMMs); the real capability is back before any
                     kernel is compiled, so that Triton builds for the GPU it runs on.
     multigpu, high_precision  fairchem's presets of those names (torch.compile; not in the
                     default list: compiling can take minutes).
   For diamond 512 (with --fp64-all every structure) each record also holds the energy and the
   largest force difference against the fp64 reference of step 2.
"""

import argparse
import contextlib
import gc
import json
import logging
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import time
import traceback

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
for sub in ("tools", "tests/fairchem", "tests/lammps"):
    if str(ROOT / sub) not in sys.path:
        sys.path.insert(0, str(ROOT / sub))

FULL_MODEL = dict(experts=64, lmax=2, mmax=2, layers=4, channels=128, hidden=128, edge=128,
                  gaussians=32, cutoff=6.0)
SMALL_MODEL = dict(experts=4, lmax=2, mmax=2, layers=2, channels=16, hidden=12, edge=16,
                   gaussians=8, cutoff=4.5)
# name: (lattice, element, a, repeat, seed)
FULL_STRUCTURES = {"diamond_512": ("diamond", "C", 3.567, 4, 1),
                   "bcc_cu_4394": ("bcc", "Cu", 2.87, 13, 2),
                   "diamond_4096": ("diamond", "C", 3.567, 8, 3)}
SMALL_STRUCTURES = {"diamond_16": ("diamond", "C", 3.567, (1, 1, 2), 1),
                    "bcc_cu_16": ("bcc", "Cu", 2.87, 2, 2),
                    "diamond_64": ("diamond", "C", 3.567, 2, 3)}
TASK = "omat"
HYDRA_PATHS = {  # name: (execution_mode, tf32)
    "fast_gpu_tf32": ("umas_fast_gpu", True), "fast_gpu_fp32": ("umas_fast_gpu", False),
    "fast_pytorch_tf32": ("umas_fast_pytorch", True), "fast_pytorch_fp32": ("umas_fast_pytorch", False),
    "general_tf32": ("general", True), "general_fp32": ("general", False)}
PRESET_PATHS = ("multigpu", "high_precision")
DEFAULT_PATHS = ["fast_gpu_tf32", "fast_gpu_fp32", "nitro", "nitro_portable", "fast_pytorch_tf32",
                 "fast_pytorch_fp32", "general_tf32", "general_fp32"]
ALL_PATHS = DEFAULT_PATHS + list(PRESET_PATHS)
CUDA_ONLY = {"fast_gpu_tf32", "fast_gpu_fp32"}  # the nitro paths say so themselves
NITRO_MODEL_ID = "UMA-S-1.2.1"
TIMING = ("unit.predict(AtomicData built once by AtomicData.from_ase as FAIRChemCalculator does; "
          "graph built by fairchem inside predict) + torch.cuda.synchronize(); energy, forces, stress")

T0 = time.time()
OUT_FILE = None


LOG_TAG = "fairchem_gpu_speed"


def log(msg):
    print(f"[{LOG_TAG} {time.time() - T0:7.1f} s] {msg}", flush=True)


def emit(rec):
    rec = {"t_s": round(time.time() - T0, 1), **rec}
    line = json.dumps(rec, default=str)
    print("RESULT " + line, flush=True)
    if OUT_FILE is not None:
        with open(OUT_FILE, "a") as f:
            f.write(line + "\n")


def first_line(err):
    text = f"{type(err).__name__}: {err}".strip()
    return text.splitlines()[0][:500] if text else type(err).__name__


class Budget:
    def __init__(self, seconds):
        self.deadline = T0 + seconds

    def left(self):
        return self.deadline - time.time()

    def over(self):
        return self.left() <= 0


class WarningLog(logging.Handler):
    """Collects fairchem's warnings (its fallbacks announce themselves there)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage().splitlines()[0][:300])


@contextlib.contextmanager
def captured_warnings():
    handler = WarningLog()
    logging.getLogger().addHandler(handler)
    try:
        yield handler.lines
    finally:
        logging.getLogger().removeHandler(handler)


# ---------------------------------------------------------------- checkpoint and conversion

def build_model(args, budget):
    """Checkpoint + converted file in WORKDIR; returns (ckpt, converted, config) or raises."""
    import torch
    import convert_fairchem
    from small_models import uma_like, write_checkpoint

    work = pathlib.Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    shape = SMALL_MODEL if args.small else FULL_MODEL
    tag = "uma-s-1p2-small" if args.small else "uma-s-1p2-full"
    ckpt, conv, meta = work / f"{tag}.pt", work / f"{tag}.safetensors", work / f"{tag}.build.json"
    config, datasets = uma_like(**shape)
    want = {"shape": shape, "seed": args.seed, "model_id": config.get("model_id")}
    if args.reuse and ckpt.exists() and conv.exists() and meta.exists():
        if json.loads(meta.read_text()).get("model") == want:
            log(f"reusing {ckpt} and {conv} ({meta} matches)")
            emit({"record": "build", "status": "reused", "checkpoint": str(ckpt), "converted": str(conv),
                  "checkpoint_mb": round(ckpt.stat().st_size / 2**20, 1),
                  "converted_mb": round(conv.stat().st_size / 2**20, 1), "model": want})
            return ckpt, conv, config
    meta.unlink(missing_ok=True)
    log(f"building the random fairchem checkpoint {ckpt} ({shape})")
    t = time.time()
    write_checkpoint(ckpt, config, datasets, seed=args.seed)
    t_ckpt = time.time() - t
    n_params = None
    with contextlib.suppress(Exception):
        sd = torch.load(str(ckpt), map_location="cpu", weights_only=False).ema_state_dict
        n_params = sum(v.numel() for k, v in sd.items() if k != "n_averaged")
        del sd
    log(f"checkpoint written in {t_ckpt:.1f} s: {ckpt.stat().st_size / 2**20:.1f} MiB, "
        f"{(n_params or 0) / 1e6:.1f} M parameters; converting (fp32 storage)")
    t = time.time()
    status = "ok"
    try:
        rc = convert_fairchem.main([str(ckpt), str(conv), "--dtype", "float32"])
        if rc != 0:
            status = f"error: tools/convert_fairchem.py returned {rc}"
    except Exception as err:  # noqa: BLE001 - fairchem's timing does not need the converted file
        status = f"error: tools/convert_fairchem.py: {first_line(err)}"
    t_conv = time.time() - t
    if status != "ok":
        log(f"conversion failed ({status}); fairchem's timing goes on")
        emit({"record": "build", "status": status, "checkpoint": str(ckpt),
              "checkpoint_s": round(t_ckpt, 1), "convert_s": round(t_conv, 1)})
        return ckpt, conv, config
    rec = {"record": "build", "status": "ok", "checkpoint": str(ckpt), "converted": str(conv),
           "checkpoint_s": round(t_ckpt, 1), "convert_s": round(t_conv, 1),
           "checkpoint_mb": round(ckpt.stat().st_size / 2**20, 1),
           "converted_mb": round(conv.stat().st_size / 2**20, 1), "parameters": n_params,
           "model": want, "converted_dtype": "float32"}
    meta.write_text(json.dumps({"model": want, "build": rec}, indent=1))
    emit(rec)
    return ckpt, conv, config


# ---------------------------------------------------------------- structures and references

def make_structures(args):
    from ase.build import bulk

    table = SMALL_STRUCTURES if args.small else FULL_STRUCTURES
    names = args.structures.split(",") if args.structures else list(table)
    out = {}
    for name in names:
        if name not in table:
            raise SystemExit(f"unknown structure {name}; known: {', '.join(table)}")
        lattice, element, a, rep, seed = table[name]
        atoms = bulk(element, lattice, a=a, cubic=True).repeat(rep if isinstance(rep, tuple) else (rep,) * 3)
        atoms.rattle(0.05, seed=seed)
        atoms.positions = atoms.positions.astype(np.float32).astype(np.float64)
        atoms.cell = np.array(atoms.cell).astype(np.float32).astype(np.float64)
        out[name] = atoms
    return out


def count_edges(atoms, cutoff):
    from ase.neighborlist import neighbor_list
    return int(len(neighbor_list("i", atoms, cutoff)))


def reference_unit(ckpt, device, dtype):
    """fairchem's "general" path (tests/fairchem/fairchem_side.py predict_unit), on `device`."""
    from fairchem_side import predict_unit
    return predict_unit(ckpt, dtype, device)


def reference_predict(unit, atoms, task, charge=0, spin=None):
    """tests/fairchem/fairchem_side.py fairchem_predict (per-atom energies taken to the host)."""
    from fairchem_side import fairchem_predict
    return fairchem_predict(unit, atoms, task, charge, spin)


def write_references(args, ckpt, structures, edges, budget):
    """Data files + npz per structure; fairchem's fp64 / fp32 predictions for the first one
    (with --fp64-all the fp64 prediction for every structure). Returns {name: fp64 prediction}."""
    import torch
    from reference_case import write_data

    ref_dir = pathlib.Path(args.ref_dir)
    ref_dir.mkdir(parents=True, exist_ok=True)
    cases = {}
    recs = {}
    for name, atoms in structures.items():
        elements = sorted(set(atoms.get_chemical_symbols()))
        q = write_data(ref_dir / f"{name}.data", atoms, elements)
        recs[name] = dict(positions=atoms.positions, cell=np.array(atoms.cell), pbc=np.array(atoms.pbc),
                          symbols=np.array(atoms.get_chemical_symbols()), task=TASK, charge=0, spin=-1,
                          Q=q, elements=np.array(elements), edges=edges[name])
        cases[name] = {"data": f"{name}.data", "npz": f"{name}.npz", "atoms": len(atoms),
                       "edges": edges[name], "elements": elements, "task": TASK,
                       "pair_coeff": f"pair_coeff * * MODEL {' '.join(elements)}"}
    first = next(iter(structures))
    ref = {}
    fp64_all = {}
    if not args.no_ref:
        for prec, dtype in (("fp64", torch.float64), ("fp32", torch.float32)):
            names = list(structures) if prec == "fp64" and args.fp64_all else [first]
            unit = None
            try:
                for name in names:
                    if budget.over():
                        emit({"record": "reference", "structure": name, "precision": prec,
                              "status": "skipped: budget"})
                        continue
                    t = time.time()
                    if unit is None:
                        unit = reference_unit(ckpt, args.device, dtype)
                    out = reference_predict(unit, structures[name], TASK)
                    for key, value in out.items():
                        if value is not None:
                            recs[name][f"{prec}_{key}"] = np.asarray(value, dtype=np.float64)
                    if name == first:
                        ref[prec] = out
                    if prec == "fp64":
                        fp64_all[name] = out
                    emit({"record": "reference", "structure": name, "precision": prec, "status": "ok",
                          "path": "general, merge_mole False, tf32 False", "energy": float(out["energy"]),
                          "max_abs_force": float(np.abs(out["forces"]).max()), "s": round(time.time() - t, 1)})
            except Exception as err:  # noqa: BLE001
                log(f"reference {prec} failed: {first_line(err)}")
                emit({"record": "reference", "precision": prec, "status": "error", "error": first_line(err)})
            finally:
                del unit
                free_memory()
        if "fp64" in ref and "fp32" in ref:
            d = np.abs(ref["fp32"]["forces"] - ref["fp64"]["forces"]).max()
            log(f"reference {first}: fp64 energy {ref['fp64']['energy']:.10f} eV, fp32 - fp64 "
                f"{ref['fp32']['energy'] - ref['fp64']['energy']:.3e} eV, forces max |diff| {d:.3e} eV/A")
    for name, rec in recs.items():
        np.savez(ref_dir / f"{name}.npz", **rec)
    (ref_dir / "cases.json").write_text(json.dumps(
        {"model": str(args.converted), "note": "LAMMPS positions/forces = ASE ones @ Q.T; "
         "pair_style edgeframe[/kk] ... task omat; npz keys as tests/fairchem/make_lammps_cases.py",
         "cases": cases}, indent=1))
    log(f"wrote {len(recs)} data files and npz files to {ref_dir}")
    return fp64_all


# ---------------------------------------------------------------- timing

def free_memory():
    gc.collect()
    with contextlib.suppress(Exception):
        import torch
        if torch.cuda.is_available():
            torch.cuda.synchronize()
            torch.cuda.empty_cache()


def sync(device):
    if device == "cuda":
        import torch
        torch.cuda.synchronize()


def hydra_settings(path):
    import torch
    from fairchem.core.units.mlip_unit.api import inference

    if path == "multigpu":
        return inference.inference_settings_multigpu()
    if path == "high_precision":
        return inference.inference_settings_high_precision()
    mode, tf32 = HYDRA_PATHS[path]
    return inference.InferenceSettings(tf32=tf32, activation_checkpointing=False, merge_mole=True,
                                       compile=False, external_graph_gen=False,
                                       execution_mode=mode, base_precision_dtype=torch.float32)


def nitro_settings():
    import torch
    from fairchem.core.units.mlip_unit.api.inference import InferenceSettings

    return InferenceSettings(tf32=True, activation_checkpointing=False, merge_mole=True, compile=False,
                             external_graph_gen=False, execution_mode=None,
                             base_precision_dtype=torch.float32, nitro=True)


def atomic_data(unit, atoms):
    """What FAIRChemCalculator.calculate hands to predict (built once)."""
    from fairchem.core.datasets.atomic_data import AtomicData

    atoms = atoms.copy()
    unit.validate_atoms_data(atoms, TASK)
    return AtomicData.from_ase(atoms, task_name=TASK, r_edges=False, r_data_keys=["spin", "charge"],
                               max_neigh=None, radius=6.0,
                               target_dtype=unit.inference_settings.base_precision_dtype)


def time_unit(unit, atoms, args, ref=None):
    """Warm-up, then the median of args.steps predict steps; returns the record's fields."""
    import torch

    cuda = args.device == "cuda"
    data = atomic_data(unit, atoms)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    t = time.time()
    pred = unit.predict(data)
    sync(args.device)
    first = time.time() - t
    for _ in range(max(args.warmup - 1, 0)):
        pred = unit.predict(data)
    sync(args.device)
    if cuda:
        warm_peak = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        t = time.perf_counter()
        pred = unit.predict(data)
        sync(args.device)
        times.append(time.perf_counter() - t)
    rec = {"median_ms": round(1e3 * statistics.median(times), 3), "min_ms": round(1e3 * min(times), 3),
           "mean_ms": round(1e3 * statistics.fmean(times), 3), "steps": len(times),
           "warmup": args.warmup, "first_step_s": round(first, 2),
           "energy": float(pred["energy"].detach().double().sum())}
    if cuda:
        steps_peak = torch.cuda.max_memory_allocated()
        rec["peak_gib"] = round(max(warm_peak, steps_peak) / 2**30, 3)
        rec["peak_steps_gib"] = round(steps_peak / 2**30, 3)
    if ref is not None:
        f = pred["forces"].detach().double().cpu().numpy()
        rec["energy_minus_fp64_ref"] = rec["energy"] - float(ref["energy"])
        rec["forces_max_diff_fp64_ref"] = float(np.abs(f - ref["forces"]).max())
    del pred, data
    return rec


def settings_summary(unit):
    s = unit.inference_settings
    mode = getattr(s.execution_mode, "value", s.execution_mode)
    return {"execution_mode": mode, "tf32": s.tf32, "merge_mole": s.merge_mole, "compile": s.compile,
            "nitro": s.nitro, "model_class": type(unit.model.module).__name__}


def composition_groups(structures):
    """Structures grouped by composition, in the given order of first appearance."""
    groups = {}
    for name, atoms in structures.items():
        key = tuple(sorted(set(atoms.get_chemical_symbols())))
        groups.setdefault(key, []).append(name)
    return list(groups.values())


def run_unit_path(path, make_unit, structures, edges, args, budget, refs, extra=None, expect=None):
    """One predict unit per composition group; a record per structure."""
    for group in composition_groups(structures):
        unit = None
        load_s = None
        for name in group:
            base = {"record": "timing", "structure": name, "atoms": len(structures[name]),
                    "edges": edges[name], "path": path, "device": args.device_name, **(extra or {})}
            if budget.over():
                emit({**base, "status": "skipped: budget"})
                continue
            try:
                with captured_warnings() as warned:
                    if unit is None:
                        log(f"{path}: loading the predict unit for {', '.join(group)}")
                        t = time.time()
                        unit = make_unit()
                        load_s = round(time.time() - t, 1)
                        summary = settings_summary(unit)
                        wrong = {k: summary[k] for k, v in (expect or {}).items() if summary[k] != v}
                        if wrong:
                            # fairchem fell back while loading: not the path asked for; nothing
                            # of this path is timed
                            log(f"{path}: fairchem fell back while loading ({wrong}): {warned[:2]}")
                            for other in structures:
                                emit({**base, "structure": other, "atoms": len(structures[other]),
                                      "edges": edges[other], "status": f"fell back at load: now {wrong}",
                                      **summary, "fairchem_warnings": warned[:4]})
                            del unit
                            free_memory()
                            return
                    log(f"{path}: {name} ({len(structures[name])} atoms, {edges[name]} edges)")
                    fields = time_unit(unit, structures[name], args, refs.get(name))
                summary = settings_summary(unit)
                status = "ok"
                if expect is not None:
                    wrong = {k: summary[k] for k, v in expect.items() if summary[k] != v}
                    if wrong:
                        status = f"fell back: now {wrong}"
                fallbacks = [w for w in warned if "cannot serve" in w or "Falling back" in w
                             or "Now running" in w or "fall" in w.lower()]
                emit({**base, "status": status, **summary, "load_s": load_s, **fields,
                      "timing": TIMING, "fairchem_warnings": fallbacks[:4]})
                log(f"{path}: {name}: median {fields['median_ms']:.2f} ms"
                    + (f", peak {fields['peak_gib']:.2f} GiB" if "peak_gib" in fields else "")
                    + ("" if status == "ok" else f" ({status})"))
                load_s = None
            except Exception as err:  # noqa: BLE001
                traceback.clear_frames(err.__traceback__)
                log(f"{path}: {name} failed: {first_line(err)}")
                emit({**base, "status": "error", "error": first_line(err)})
                unit = None  # a failed unit (say, out of memory) is not reused
            free_memory()
        del unit
        free_memory()


def nitro_gate(config, ckpt, device):
    """fairchem's own reasons for refusing Nitro on this checkpoint (its checks, in its order)."""
    from fairchem.core.units.mlip_unit.predict import _checkpoint_model_name

    reasons = []
    name = _checkpoint_model_name(config)
    if name != NITRO_MODEL_ID:
        reasons.append(f"{name} is not supported in nitro mode (fairchem admits model_id "
                       f"{NITRO_MODEL_ID} only)")
    if device != "cuda":
        reasons.append("nitro mode requires a CUDA device")
    reasons.append("and the checkpoint file's MD5 must be on Nitro's allowlist "
                   "(uma-s-1p2p1 and its fine-tunes): a random checkpoint is not")
    return "; ".join(reasons)


def nitro_checkpoint(ckpt):
    """A copy of the checkpoint with model_id UMA-S-1.2.1 and the same EMA weights, beside it
    (its model_state_dict emptied: fairchem's predict reads the EMA weights, Nitro too)."""
    import torch

    dst = ckpt.with_name(ckpt.stem + ".nitro-1p2p1.pt")
    if dst.exists() and dst.stat().st_mtime >= ckpt.stat().st_mtime:
        return dst
    t = time.time()
    obj = torch.load(str(ckpt), map_location="cpu", weights_only=False)
    obj.model_config["model_id"] = NITRO_MODEL_ID
    obj.model_state_dict = {}
    tmp = dst.with_name(dst.name + ".tmp")
    torch.save(obj, str(tmp))
    tmp.replace(dst)
    del obj
    gc.collect()
    log(f"nitro: wrote {dst} (model_id {NITRO_MODEL_ID}) in {time.time() - t:.1f} s")
    return dst


def nitro_allowlisted_copy(ckpt):
    """Bench-only: import Nitro (its kernel policy is chosen at import, from the CUDA capability
    torch reports), write the UMA-S-1.2.1 copy, put its MD5 on Nitro's allowlist in this process."""
    import fairchem.core.models.uma.uma_nitro._inference as nitro_impl
    from fairchem.core.common.checksums import cached_file_md5

    nckpt = nitro_checkpoint(ckpt)
    digest = cached_file_md5(nckpt)
    nitro_impl._SUPPORTED_CHECKPOINTS[digest] = "edgeframe bench: random UMA-S-1.2.1-shaped checkpoint"
    return nckpt, digest, nitro_impl.kernel_backend_summary()


def run_nitro(args, ckpt, config, structures, edges, budget, portable):
    from fairchem.core.units.mlip_unit import load_predict_unit

    path = "nitro_portable" if portable else "nitro"
    if not portable:
        emit({"record": "nitro_gate", "path": "nitro", "checkpoint": str(ckpt), "status": "refused",
              "reason": nitro_gate(config, ckpt, args.device)})
    if args.device != "cuda":
        for name in structures:
            emit({"record": "timing", "structure": name, "path": path, "status": "skipped: needs CUDA"})
        return
    if args.no_nitro_patch:
        for name in structures:
            emit({"record": "timing", "structure": name, "path": path,
                  "status": "skipped: --no-nitro-patch (fairchem refuses a random checkpoint)"})
        return
    if portable:
        run_portable_child(args, ckpt, structures, budget)
        return
    try:
        nckpt, digest, backend = nitro_allowlisted_copy(ckpt)
    except Exception as err:  # noqa: BLE001 - e.g. no cutlass for sm90's CuTe kernels
        log(f"nitro: Nitro's module does not import with this GPU's kernel policy: {first_line(err)}")
        for name in structures:
            emit({"record": "timing", "structure": name, "atoms": len(structures[name]), "path": path,
                  "status": "error", "error": f"importing fairchem.core.models.uma.uma_nitro: {first_line(err)}"})
        return
    extra = {"nitro_checkpoint": str(nckpt), "nitro_md5_allowlisted_by_bench": digest,
             "nitro_kernel_backend": backend, "model_id": NITRO_MODEL_ID}
    run_unit_path(path, lambda: load_predict_unit(str(nckpt), inference_settings=nitro_settings(),
                                                  device=args.device),
                  structures, edges, args, budget, fp64_refs_from_npz(args, structures), extra=extra,
                  expect={"nitro": True, "model_class": "UMANitroModel"})


def run_portable_child(args, ckpt, structures, budget):
    """nitro_portable runs in a child process (the kernel policy is fixed at Nitro's import)."""
    left = int(budget.left())
    if left < 30:
        for name in structures:
            emit({"record": "timing", "structure": name, "path": "nitro_portable", "status": "skipped: budget"})
        return
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", "nitro_portable",
           "--device", args.device, "--workdir", args.workdir, "--ref-dir", args.ref_dir, "--checkpoint", str(ckpt),
           "--structures", ",".join(structures), "--steps", str(args.steps), "--warmup", str(args.warmup),
           "--budget", str(left - 10), "--out", args.out] + (["--small"] if args.small else [])
    log(f"nitro_portable: child process, {left - 10} s budget")
    try:
        proc = subprocess.run(cmd, stdout=sys.stdout, stderr=sys.stderr, timeout=left + 20)
        if proc.returncode != 0:
            log(f"nitro_portable: child returned {proc.returncode}")
    except subprocess.TimeoutExpired:
        log("nitro_portable: child killed at the budget")
        emit({"record": "timing", "path": "nitro_portable", "status": "error: child past budget"})


def fp64_refs_from_npz(args, names):
    """{name: {"energy", "forces"}} of the fp64 references the parent wrote into REF_DIR."""
    refs = {}
    for name in names:
        path = pathlib.Path(args.ref_dir) / f"{name}.npz"
        if path.exists():
            with np.load(path) as z:
                if "fp64_forces" in z:
                    refs[name] = {"energy": float(z["fp64_energy"]), "forces": np.array(z["fp64_forces"])}
    return refs


def reset_triton_target(real_capability):
    """Gives a Triton driver made while torch reported another capability the real one back:
    Triton's CUDA driver keeps torch.cuda.get_device_capability as it was when the driver was
    made (triton/backends/driver.py) and asks it for the target of every kernel it compiles."""
    try:
        from triton.runtime import driver
    except ImportError:
        return
    for made in (getattr(driver, "_default", None), getattr(driver, "_active", None)):
        if made is not None and hasattr(made, "get_device_capability"):
            made.get_device_capability = real_capability


def worker_nitro_portable(args):
    """Child: torch reports CUDA capability 8.0 while Nitro's module is imported, so Nitro picks
    its portable kernel policy (portable_pytorch_ieee: Triton kernels, IEEE fp32 GEMMs), and again
    while the predict unit is loaded: Nitro's load checks that the device's capability is the one
    it chose its kernels for (_validate_device) and otherwise falls back to umas_fast_gpu. The
    real capability is restored after each: Triton takes the target it compiles for from torch,
    and cubins built for 8.0 do not load on a 9.0 GPU ("no kernel image is available")."""
    import torch

    real_capability = torch.cuda.get_device_capability
    real = real_capability() if torch.cuda.is_available() else None
    structures = make_structures(args)
    edges = {n: count_edges(a, (SMALL_MODEL if args.small else FULL_MODEL)["cutoff"])
             for n, a in structures.items()}
    ckpt = pathlib.Path(args.checkpoint)
    from fairchem.core.units.mlip_unit import load_predict_unit
    torch.cuda.get_device_capability = lambda device=None: (8, 0)
    try:
        nckpt, digest, backend = nitro_allowlisted_copy(ckpt)   # imports Nitro: its policy is fixed here
    except Exception as err:  # noqa: BLE001
        torch.cuda.get_device_capability = real_capability
        log(f"nitro_portable: {first_line(err)}")
        for name in structures:
            emit({"record": "timing", "structure": name, "path": "nitro_portable", "status": "error",
                  "error": first_line(err)})
        return 0
    torch.cuda.get_device_capability = real_capability
    reset_triton_target(real_capability)
    extra = {"nitro_checkpoint": str(nckpt), "nitro_md5_allowlisted_by_bench": digest,
             "nitro_kernel_backend": backend, "real_capability": list(real) if real else None,
             "capability_reported": [8, 0], "model_id": NITRO_MODEL_ID}

    def load_reporting_capability_8():
        torch.cuda.get_device_capability = lambda device=None: (8, 0)
        try:
            return load_predict_unit(str(nckpt), inference_settings=nitro_settings(), device=args.device)
        finally:
            torch.cuda.get_device_capability = real_capability
            reset_triton_target(real_capability)

    run_unit_path("nitro_portable", load_reporting_capability_8,
                  structures, edges, args, Budget(args.budget), fp64_refs_from_npz(args, structures), extra=extra,
                  expect={"nitro": True, "model_class": "UMANitroModel"})
    return 0


# ---------------------------------------------------------------- main

def main(argv=None):
    global OUT_FILE, LOG_TAG
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--small", action="store_true",
                    help="CPU smoke test: uma_like's small defaults (4 experts, C 16, 2 layers, "
                         "4.5 A) and 16/16/64-atom structures")
    ap.add_argument("--workdir", default="/tmp/fairchem-speed",
                    help="checkpoint (.pt, 2.2 GiB at full size), converted model (.safetensors, 1.1 GiB), "
                         "Nitro's copy (1.1 GiB)")
    ap.add_argument("--ref-dir", default=None, help="data files, npz, cases.json (default WORKDIR/ref)")
    ap.add_argument("--out", default=None, help="JSON lines (default WORKDIR/fairchem-speed.jsonl; appended)")
    ap.add_argument("--paths", default=",".join(DEFAULT_PATHS),
                    help=f"comma list, in this order; known: {', '.join(ALL_PATHS)}")
    ap.add_argument("--structures", default=None, help="comma list (default all three)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps (median of these)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=float, default=400.0,
                    help="seconds from the start; what is left after it is skipped")
    ap.add_argument("--seed", type=int, default=0, help="write_checkpoint's seed")
    ap.add_argument("--reuse", action="store_true", help="keep WORKDIR's checkpoint and converted file "
                    "when their build.json records the same model")
    ap.add_argument("--build-only", action="store_true", help="checkpoint, conversion, references; no timing")
    ap.add_argument("--no-ref", action="store_true", help="no fp64/fp32 reference predictions")
    ap.add_argument("--fp64-all", action="store_true",
                    help="the fp64 reference for every structure (default: the first), so that every "
                         "timing record has its max |dF| against fp64 (bench/uma_gate.sh)")
    ap.add_argument("--no-nitro-patch", action="store_true",
                    help="do not put the random checkpoint's copy on Nitro's allowlist")
    ap.add_argument("--modules-out", default=None,
                    help="at the end, write the top-level modules this process imported, with "
                         "their distributions and files, as JSON (to check a carried wheel set)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--checkpoint", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.ref_dir = args.ref_dir or str(pathlib.Path(args.workdir) / "ref")
    args.out = args.out or str(pathlib.Path(args.workdir) / "fairchem-speed.jsonl")
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    OUT_FILE = args.out
    paths = [p for p in args.paths.split(",") if p]
    unknown = [p for p in paths if p not in ALL_PATHS]
    if unknown:
        raise SystemExit(f"unknown paths {unknown}; known: {', '.join(ALL_PATHS)}")
    logging.basicConfig(level=logging.WARNING, format="fairchem log: %(levelname)s %(message)s")

    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda, but torch sees no GPU (use --device cpu for a smoke test)")
    args.device_name = torch.cuda.get_device_name() if args.device == "cuda" else platform.processor() or "cpu"
    if args.worker == "nitro_portable":
        LOG_TAG = "fairchem_gpu_speed child nitro_portable"
        return worker_nitro_portable(args)

    budget = Budget(args.budget)
    t = time.time()
    import fairchem.core
    from fairchem.core.units.mlip_unit import load_predict_unit
    import_s = time.time() - t
    try:
        from importlib.metadata import version
        fc_version = version("fairchem-core")
    except Exception:  # noqa: BLE001
        fc_version = getattr(fairchem.core, "__version__", "unknown")
    emit({"record": "environment", "python": platform.python_version(), "torch": torch.__version__,
          "fairchem_core": fc_version, "device": args.device, "device_name": args.device_name,
          "cuda_capability": list(torch.cuda.get_device_capability()) if args.device == "cuda" else None,
          "triton": _version("triton"), "fairchem_import_s": round(import_s, 1), "small": args.small,
          "paths": paths, "steps": args.steps, "warmup": args.warmup, "budget_s": args.budget})
    log(f"fairchem-core {fc_version} on torch {torch.__version__}, {args.device_name}; imported in {import_s:.1f} s")

    ckpt, conv, config = build_model(args, budget)
    args.converted = conv
    structures = make_structures(args)
    cutoff = (SMALL_MODEL if args.small else FULL_MODEL)["cutoff"]
    edges = {n: count_edges(a, cutoff) for n, a in structures.items()}
    log("structures: " + ", ".join(f"{n} {len(a)} atoms {edges[n]} edges" for n, a in structures.items()))
    try:
        refs = write_references(args, ckpt, structures, edges, budget)
    except Exception as err:  # noqa: BLE001
        log(f"references failed: {first_line(err)}")
        emit({"record": "reference", "status": "error", "error": first_line(err)})
        refs = {}
    if args.build_only:
        log("--build-only: done")
        return 0

    for path in paths:
        if path in CUDA_ONLY and args.device != "cuda":
            for name in structures:
                emit({"record": "timing", "structure": name, "atoms": len(structures[name]),
                      "path": path, "status": "skipped: needs CUDA (Triton kernels on device tensors)"})
            log(f"{path}: skipped on the CPU")
            continue
        if path in ("nitro", "nitro_portable"):
            try:
                run_nitro(args, ckpt, config, structures, edges, budget, portable=path == "nitro_portable")
            except Exception as err:  # noqa: BLE001
                log(f"{path} failed: {first_line(err)}")
                emit({"record": "timing", "path": path, "status": "error", "error": first_line(err)})
            continue
        settings = hydra_settings(path)
        expect = {"merge_mole": True, "compile": settings.compile}
        if settings.execution_mode is not None:
            expect["execution_mode"] = settings.execution_mode
        run_unit_path(path, lambda s=settings: load_predict_unit(str(ckpt), inference_settings=s,
                                                                 device=args.device),
                      structures, edges, args, budget, refs, expect=expect)

    summary(args.out)
    if args.modules_out:
        write_modules(args.modules_out)
    log(f"done; results in {args.out}, references in {args.ref_dir}")
    return 0


def write_modules(path):
    """Top-level modules in sys.modules -> distributions (importlib.metadata) and files."""
    import importlib.metadata as md

    dists = md.packages_distributions()
    tops = {}
    for name, mod in list(sys.modules.items()):
        top = name.split(".")[0]
        if top in tops or top.startswith("_") and top not in dists:
            continue
        where = getattr(sys.modules.get(top), "__file__", None) or \
            str(list(getattr(sys.modules.get(top), "__path__", []) or [None])[0])
        tops[top] = {"distributions": sorted(set(dists.get(top, []))), "file": where}
    pathlib.Path(path).write_text(json.dumps(tops, indent=1, sort_keys=True))
    log(f"wrote {len(tops)} top-level modules to {path}")


def _version(name):
    try:
        from importlib.metadata import version
        return version(name)
    except Exception:  # noqa: BLE001
        return None


def summary(out):
    """A table of this run's timing records (the jsonl may hold earlier runs: the last wins)."""
    rows = {}
    with contextlib.suppress(OSError):
        for line in open(out):
            rec = json.loads(line)
            if rec.get("record") == "timing" and "structure" in rec:
                rows[(rec["structure"], rec["path"])] = rec
    if not rows:
        return
    print("\n| structure | path | status | median ms | peak GiB | max dF vs fp64 ref |", flush=True)
    print("|---|---|---|---|---|---|")
    for (name, path), rec in rows.items():
        df = rec.get("forces_max_diff_fp64_ref")
        print(f"| {name} | {path} | {rec['status'][:60]} | {rec.get('median_ms', '-')} | "
              f"{rec.get('peak_gib', '-')} | {'-' if df is None else f'{df:.2e}'} |")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
