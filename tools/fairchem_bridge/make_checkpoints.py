#!/usr/bin/env python
"""Random-weight fairchem inference checkpoints built from fairchem's own released configs.

    python make_checkpoints.py --model {uma-s-1p2,esen-sm-conserving,esen-30m-l3} --out PATH
                               [--seed N] [--elements C,Cu,Mg,O,H] [--no-check] [--reuse]

Runs in the fairchem venv (scripts/bootstrap.sh: EDGEFRAME_FAIRCHEM_PYTHON). Writes PATH, a
torch.save'd fairchem MLIPInferenceCheckpoint that fairchem's own
load_predict_unit(PATH, inference_settings=..., device="cpu") loads, and PATH.json (what was built,
from which config, what is random, the element references, sha256 of PATH).

Architecture: the hyperparameters of fairchem's released training configs (repository
facebookresearch/fairchem, configs/uma/training_release/; see CONFIGS below for the files and
commits they were read from), with these deliberate differences, also recorded in PATH.json:
  - uma-s-1p2: moe_layer_type "pytorch" instead of "fairchem_cpp" (fairchem_cpp is a CUDA
    extension that is not installed and does not run on the CPU; both compute the same MoLE).
  - esen-sm-conserving: the backbone keys use_solvent_embedding / solvent_emb_grad /
    solvent_emb_hidden of backbone/K4L2.yaml are dropped: fairchem-core 2.24.0's eSCNMDBackbone
    has no such arguments (it raises TypeError on them).
  - esen-30m-l3: there is no released fairchem 2.x config for eSEN-30M (the eSEN-30M-OAM / -OMAT /
    -MP checkpoints were made for fairchem-core 1.x's models.esen, which 2.24.0 does not have), so
    this is the eSEN-sm conserving backbone at the eSEN-30M shape the issue names: lmax 3, mmax 2,
    10 layers, sphere_channels 128, task omat with energy, forces and stress.

Weights: fairchem's own initialisation under torch.manual_seed(seed), then every tensor that
initialisation leaves trivial is redrawn (norm and LayerNorm scales of 1 -> U(0.5, 1.5); zero
biases -> N(0, 0.1); the source / target atom embeddings of U(+-0.001) -> U(+-0.05)), and the
routing MLP's last layer is scaled up so that the 64 expert coefficients differ clearly between
compositions (with fairchem's init they all lie within 7% of 1/64 + 0.005). Every parameter of
the checkpoint is therefore random and non-trivial. Element references are random per element
and per energy task (U(-2.5, 0.5) eV; tasks that share references in the config share them
here); the normaliser rmsd is the config's. The EMA state dict (what fairchem's predict loads,
use_ema=True) holds these weights; model_state_dict holds the same large tensors but perturbed
copies of every parameter of up to 65536 elements, so a converter that reads model_state_dict
instead of ema_state_dict gives different numbers.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import math
import os
import sys
import time

import torch

_T0 = time.perf_counter()

# Where the hyperparameters were read (read_file on facebookresearch/fairchem).
CONFIGS = {
    "uma-s-1p2": [
        ("configs/uma/training_release/backbone/K4L2_1p2.yaml", "6fc7ff2951fbcbe12e12abb56e5ff842bc5563d6"),
        ("configs/uma/training_release/uma_sm_full_conserve_1p2.yaml", "5d9b1c2212bdc7bd09d2ef072fda193205c4e0b4"),
        ("configs/uma/training_release/tasks/uma_conserving_stress_1p2.yaml", "6fc7ff2951fbcbe12e12abb56e5ff842bc5563d6"),
        ("configs/uma/training_release/element_refs/uma_v1_2b_hof_lin_refs.yaml (layout only)", "6fc7ff2951fbcbe12e12abb56e5ff842bc5563d6"),
    ],
    "esen-sm-conserving": [
        ("configs/uma/training_release/backbone/K4L2.yaml", "4538dc1cec5ce89dc2a2de46aa1f753564b2ff18"),
        ("configs/uma/training_release/esen_sm_cons_orbnet.yaml", "f7e972c86bb5153a0b2a00c4da006de0becc7da5"),
    ],
    "esen-30m-l3": [
        ("configs/uma/training_release/backbone/K4L2.yaml (changed: lmax 3, num_layers 10)", "4538dc1cec5ce89dc2a2de46aa1f753564b2ff18"),
        ("configs/uma/training_release/tasks/mptrj_omat_conserving_stress.yaml", "641260299d262addacfb510d0dc32d6d52bbc0e5"),
    ],
}

MAX_NUM_ELEMENTS = 100  # fairchem's max_num_elements in all three configs; references are indexed by Z
REF_RANGE = (-2.5, 0.5)  # eV per atom, random element references
SMALL_TENSOR = 65536  # parameters up to this size are perturbed in model_state_dict (see docstring)
# Scale of the routing MLP's last layer. With fairchem's init all 64 coefficients lie in
# 0.0195-0.0220 (softmax + 0.005: 64.0 effective experts, sum(a)^2 / sum(a^2)) on the six
# structures of structures.py; x30 gave 23-54 effective experts, x60 6-24, x100 3-10, x200 2-4
# (seed 0): x60 routes clearly by composition without one expert taking all.
ROUTING_SCALE = 60.0

BACKBONE = "fairchem.core.models.uma.escn_moe.eSCNMDMoeBackbone"
HYDRA = "fairchem.core.models.base.HydraModel"
EFS_HEAD = "fairchem.core.models.uma.escn_md.MLP_EFS_Head"
TASK = "fairchem.core.units.mlip_unit.mlip_unit.Task"


def log(msg: str) -> None:
    print(f"[make_checkpoints {time.perf_counter() - _T0:7.1f}s] {msg}", flush=True)


# ---------------------------------------------------------------- configs -----------------------

def _common_backbone(**changes) -> dict:
    """The eSCN-MD backbone keys shared by K4L2.yaml and K4L2_1p2.yaml."""
    cfg = {
        "model": BACKBONE,
        "moe_dropout": 0.05,
        "moe_layer_type": "pytorch",
        "use_composition_embedding": True,
        "use_global_embedding": False,
        "max_num_elements": MAX_NUM_ELEMENTS,
        "sphere_channels": 128,
        "lmax": 2,
        "mmax": 2,
        "max_neighbors": 300,
        "use_pbc": True,
        "use_pbc_single": True,
        "cutoff": 6,
        "edge_channels": 128,
        "distance_function": "gaussian",
        "regress_forces": True,
        "direct_forces": False,
        "num_layers": 4,
        "hidden_channels": 128,
        "norm_type": "rms_norm_sh",
        "act_type": "gate",
        "ff_type": "spectral",
        "chg_spin_emb_type": "rand_emb",
        "cs_emb_grad": True,
    }
    cfg.update(changes)
    return cfg


def _loss(kind: str, coefficient: float, reduction: str | None = None) -> dict:
    inner = {"_target_": f"fairchem.core.modules.loss.{kind}"}
    cfg = {"_target_": "fairchem.core.modules.loss.DDPMTLoss", "loss_fn": inner, "coefficient": coefficient}
    if reduction is not None:
        cfg["reduction"] = reduction
    return cfg


def _normalizer(rmsd: float) -> dict:
    return {"_target_": "fairchem.core.modules.normalization.normalizer.Normalizer", "mean": 0.0, "rmsd": rmsd}


def energy_task(dataset: str, coefficient: float, rmsd: float, refs: list[float]) -> dict:
    return {
        "_target_": TASK, "name": f"{dataset}_energy", "level": "system", "property": "energy",
        "loss_fn": _loss("PerAtomMAELoss", coefficient),
        "out_spec": {"dim": [1], "dtype": "float32"},
        "normalizer": _normalizer(rmsd),
        "element_references": {
            "_target_": "fairchem.core.modules.normalization.element_references.ElementReferences",
            "element_references": {"_target_": "torch.DoubleTensor", "_args_": [refs]},
        },
        "datasets": [dataset], "metrics": ["mae", "per_atom_mae"],
    }


def forces_task(dataset: str, coefficient: float, rmsd: float) -> dict:
    return {
        "_target_": TASK, "name": f"{dataset}_forces", "level": "atom", "property": "forces",
        "train_on_free_atoms": True, "eval_on_free_atoms": True,
        "loss_fn": _loss("L2NormLoss", coefficient, "mean"),
        "out_spec": {"dim": [3], "dtype": "float32"},
        "normalizer": _normalizer(rmsd),
        "datasets": [dataset], "metrics": ["mae", "cosine_similarity", "magnitude_error"],
    }


def stress_task(dataset: str, coefficient: float, rmsd: float) -> dict:
    return {
        "_target_": TASK, "name": f"{dataset}_stress", "level": "system", "property": "stress",
        "loss_fn": _loss("MAELoss", coefficient, "mean"),
        "out_spec": {"dim": [1, 9], "dtype": "float32"},
        "normalizer": _normalizer(rmsd),
        "datasets": [dataset], "metrics": ["mae"],
    }


def random_refs(gen: torch.Generator) -> list[float]:
    refs = torch.empty(MAX_NUM_ELEMENTS, dtype=torch.float64).uniform_(*REF_RANGE, generator=gen)
    refs[0] = 0.0  # Z = 0 is no element
    return refs.tolist()


def uma_s_1p2(gen: torch.Generator) -> tuple[dict, list, dict]:
    # uma_sm_full_conserve_1p2.yaml: dataset_mapping, coefficients, normalizer_rmsd 1.342
    mapping = {"oc20": "oc20", "oc22": "oc22", "oc25": "oc25", "omol": "omol", "omat": "omat",
               "omat_rattle": "omat", "odac": "odac", "omc": "omc"}
    backbone = _common_backbone(
        num_experts=64, composition_dropout=0.1, otf_graph=False, num_distance_basis=32,
        regress_stress=True, dataset_mapping=mapping, dataset_emb_grad=True,
        charge_balanced_channels=[0, 1, 2])
    model = {
        "_target_": HYDRA, "backbone": backbone, "pass_through_head_outputs": True,
        "heads": {"energyandforcehead": {
            "module": "fairchem.core.models.uma.escn_moe.DatasetSpecificMoEWrapper",
            "head_cls": EFS_HEAD, "head_kwargs": {"wrap_property": False},
            "dataset_mapping": dict(mapping)}},
        # The released UMA-S 1.2 checkpoint's id; the backbone keys its composition-mean quirk on it
        # (escn_moe.py set_MOLE_coefficients: index_reduce include_self only for "UMA-S-1.2").
        "model_id": "UMA-S-1.2",
    }
    rmsd = 1.342
    # uma_conserving_stress_1p2.yaml: omat_rattle shares omat's element references.
    ref_groups = ["omc", "omol", "odac", "oc20", "omat", "oc22", "oc25"]
    refs = {g: random_refs(gen) for g in ref_groups}
    energy_coef = {"omc": 25, "omol": 30, "odac": 25, "oc20": 20, "omat": 10, "omat_rattle": 2,
                   "oc22": 6, "oc25": 6}
    force_coef = {"omc": 10, "oc20": 10, "omat": 10, "omat_rattle": 6, "omol": 10, "odac": 10,
                  "oc25": 5, "oc22": 5}
    tasks = [energy_task(d, c, rmsd, refs["omat" if d == "omat_rattle" else d]) for d, c in energy_coef.items()]
    tasks += [forces_task(d, c, rmsd) for d, c in force_coef.items()]
    tasks += [stress_task(d, 1, rmsd) for d in ("omc", "omat", "omat_rattle")]
    notes = {"moe_layer_type": "pytorch (config: fairchem_cpp, a CUDA extension not available on CPU)"}
    return model, tasks, notes


def _esen(gen: torch.Generator, dataset: str, lmax: int, num_layers: int, regress_stress: bool,
          rmsd: float, energy_coef: float, force_coef: float) -> tuple[dict, list]:
    backbone = _common_backbone(
        num_experts=0, otf_graph=True, num_distance_basis=64, lmax=lmax, num_layers=num_layers,
        regress_stress=regress_stress, dataset_list=[dataset])
    model = {
        "_target_": HYDRA, "backbone": backbone, "pass_through_head_outputs": True,
        "heads": {"energyandforcehead": {
            "module": "fairchem.core.models.uma.escn_moe.DatasetSpecificSingleHeadWrapper",
            "head_cls": EFS_HEAD, "head_kwargs": {"wrap_property": False},
            "dataset_names": [dataset]}},
    }
    tasks = [energy_task(dataset, energy_coef, rmsd, random_refs(gen)), forces_task(dataset, force_coef, rmsd)]
    if regress_stress:
        tasks.append(stress_task(dataset, 1, rmsd))
    return model, tasks


def esen_sm_conserving(gen: torch.Generator) -> tuple[dict, list, dict]:
    # esen_sm_cons_orbnet.yaml: num_moe_experts 0, otf_graph True, regress_stress False,
    # normalizer_rmsd 0.984507, energy_coef 10, force_coef 5, dataset_list [omol]
    model, tasks = _esen(gen, "omol", lmax=2, num_layers=4, regress_stress=False, rmsd=0.984507,
                         energy_coef=10, force_coef=5)
    notes = {"dropped backbone keys": "use_solvent_embedding, solvent_emb_grad, solvent_emb_hidden "
                                      "(not arguments of fairchem-core 2.24.0's eSCNMDBackbone)",
             "stress": "no stress task in the config; fairchem's predict adds an untrained omol_stress "
                       "task (autograd of the energy) by default"}
    return model, tasks, notes


def esen_30m_l3(gen: torch.Generator) -> tuple[dict, list, dict]:
    # No released fairchem 2.x config: K4L2 backbone at lmax 3 / 10 layers, omat tasks as in
    # mptrj_omat_conserving_stress.yaml, normalizer_rmsd taken from uma_sm_full_conserve_1p2.yaml.
    model, tasks = _esen(gen, "omat", lmax=3, num_layers=10, regress_stress=True, rmsd=1.342,
                         energy_coef=10, force_coef=10)
    notes = {"config": "no released fairchem 2.x config for eSEN-30M (its checkpoints are for "
                       "fairchem-core 1.x models.esen); eSEN-sm conserving backbone with lmax 3, "
                       "mmax 2, 10 layers, sphere_channels 128; task omat with stress; "
                       "normalizer_rmsd 1.342 from uma_sm_full_conserve_1p2.yaml"}
    return model, tasks, notes


MODELS = {"uma-s-1p2": uma_s_1p2, "esen-sm-conserving": esen_sm_conserving, "esen-30m-l3": esen_30m_l3}


# ---------------------------------------------------------------- weights -----------------------

@torch.no_grad()
def randomize(model: torch.nn.Module, gen: torch.Generator) -> dict:
    """Redraw every tensor that fairchem's initialisation leaves trivial (see module docstring)."""
    changed = {"ones -> U(0.5,1.5)": 0, "zeros -> N(0,0.1)": 0, "atom pair embeddings -> U(+-0.05)": 0,
               "routing last layer x%g" % ROUTING_SCALE: 0, "kept (fairchem's random init)": 0}
    for name, p in model.named_parameters():
        flat = p.reshape(-1)
        if name.endswith(("backbone.source_embedding.weight", "backbone.target_embedding.weight")):
            # Large enough to matter next to the Gaussian distance features they are concatenated
            # with, small enough not to swamp them: at U(+-0.5) the LayerNorm of the radial MLPs
            # left the energy 4-6x less sensitive to distances (max |F| 0.06 instead of 0.23-0.33
            # eV/A on the check cell, eSEN-sm, seed 0).
            p.uniform_(-0.05, 0.05, generator=gen)
            changed["atom pair embeddings -> U(+-0.05)"] += 1
        elif name == "backbone.routing_mlp.4.weight":
            p.mul_(ROUTING_SCALE)
            changed["routing last layer x%g" % ROUTING_SCALE] += 1
        elif flat.numel() > 1 and bool((flat == flat[0]).all()):
            if flat[0].item() == 1.0:
                p.uniform_(0.5, 1.5, generator=gen)
                changed["ones -> U(0.5,1.5)"] += 1
            elif flat[0].item() == 0.0:
                p.normal_(0.0, 0.1, generator=gen)
                changed["zeros -> N(0,0.1)"] += 1
            else:
                raise RuntimeError(f"{name}: constant initial value {flat[0].item()} not handled")
        else:
            changed["kept (fairchem's random init)"] += 1
    for name, p in model.named_parameters():
        flat = p.reshape(-1)
        if not torch.isfinite(flat).all() or (flat.numel() > 1 and bool((flat == flat[0]).all())):
            raise RuntimeError(f"{name} is still trivial or not finite after randomisation")
    return changed


# ---------------------------------------------------------------- check -------------------------

def _check_atoms(elements: list[str], seed: int):
    """A rattled 2x2x2 fcc cell (a = 4.0 A, 32 atoms) with the elements assigned in turn."""
    from ase.build import bulk

    atoms = bulk("Cu", "fcc", a=4.0, cubic=True).repeat((2, 2, 2))
    atoms.set_chemical_symbols([elements[i % len(elements)] for i in range(len(atoms))])
    atoms.rattle(stdev=0.05, seed=seed)
    return atoms


@torch.no_grad()
def check(model: torch.nn.Module, tasks: list, elements: list[str], seed: int) -> dict:
    """One float32 forward of the in-memory model on a small cell of the given elements: energy,
    forces and stress must be finite and of a sane size (|E|/N < 20 eV, |F| < 50 eV/A)."""
    from fairchem.core.datasets.atomic_data import AtomicData, atomicdata_list_to_batch

    energy_tasks = {t["datasets"][0]: t for t in tasks if t["property"] == "energy"}
    dataset = "omat" if "omat" in energy_tasks else next(iter(energy_tasks))
    task = energy_tasks[dataset]
    atoms = _check_atoms(elements, seed)
    atoms.info.update({"charge": 0, "spin": 1 if dataset == "omol" else 0})
    data = AtomicData.from_ase(atoms, task_name=dataset, r_data_keys=["spin", "charge"])
    batch = atomicdata_list_to_batch([data])
    backbone = model.backbone
    saved = (backbone.otf_graph, backbone.always_use_pbc, model.training)
    backbone.otf_graph, backbone.always_use_pbc = True, False  # as fairchem's inference overrides
    model.eval()
    try:
        with torch.enable_grad():
            out = model(batch)
    finally:
        backbone.otf_graph, backbone.always_use_pbc = saved[0], saved[1]
        model.train(saved[2])
    rmsd = task["normalizer"]["rmsd"]
    refs = task["element_references"]["element_references"]["_args_"][0]
    # The dataset wrappers return {task: {property: tensor}} (their own wrap_property is True).
    e_net = float(out[f"{dataset}_energy"]["energy"].sum()) * rmsd
    e_ref = float(sum(refs[z] for z in atoms.get_atomic_numbers()))
    forces = out[f"{dataset}_forces"]["forces"].detach() * rmsd
    result = {"structure": f"fcc a=4.0 2x2x2 rattled, {'/'.join(elements)} in turn",
              "task": dataset, "natoms": len(atoms), "energy_net_eV": e_net, "energy_refs_eV": e_ref,
              "max_force_eV_per_A": float(forces.norm(dim=1).max())}
    if f"{dataset}_stress" in out:
        result["max_stress_eV_per_A3"] = float(out[f"{dataset}_stress"]["stress"].abs().max() * rmsd)
    coeffs = getattr(getattr(backbone, "global_mole_tensors", None), "expert_mixing_coefficients", None)
    if coeffs is not None and getattr(backbone, "num_experts", 0) > 0:
        a = coeffs[0].double()
        result["mole_coefficients"] = {"min": float(a.min()), "max": float(a.max()),
                                       "effective_experts": float(a.sum() ** 2 / (a ** 2).sum())}
    values = [e_net, float(forces.abs().max())]
    if not all(math.isfinite(v) for v in values):
        raise RuntimeError(f"check: non-finite prediction {result}")
    if abs(e_net) / len(atoms) > 20.0 or result["max_force_eV_per_A"] > 50.0:
        raise RuntimeError(f"check: prediction out of the sane range {result}")
    return result


# ---------------------------------------------------------------- save --------------------------

def state_dicts(model: torch.nn.Module, gen: torch.Generator) -> tuple[dict, dict]:
    """(model_state_dict, ema_state_dict) as fairchem's training unit writes them: the EMA dict is
    an AveragedModel's ("module." prefix, n_averaged), which load_inference_model(use_ema=True)
    reads. Large tensors are shared between the two (torch.save stores them once)."""
    params = {name for name, _ in model.named_parameters()}
    sd = model.state_dict()
    ema = {"n_averaged": torch.tensor(1, dtype=torch.long)}
    ema.update({f"module.{k}": v for k, v in sd.items()})
    raw = {}
    for k, v in sd.items():
        if k in params and v.is_floating_point() and v.numel() <= SMALL_TENSOR:
            noise = torch.randn(v.shape, generator=gen, dtype=v.dtype)
            raw[k] = v + 0.1 * (v.std() if v.numel() > 1 else v.abs() + 0.1) * noise
        else:
            raw[k] = v
    return raw, ema


def sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def build(model_name: str, out: str, seed: int = 0, elements: list[str] | None = None,
          run_check: bool = True) -> dict:
    """Build, check and write one checkpoint; returns the provenance written to out + '.json'."""
    import hydra
    import fairchem.core
    from fairchem.core.units.mlip_unit.api.inference import MLIPInferenceCheckpoint

    elements = elements or ["C", "Cu", "Mg", "O", "H"]
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1)
    model_config, tasks_config, notes = MODELS[model_name](gen)
    timings = {}

    t = time.perf_counter()
    log(f"{model_name}: instantiating fairchem's HydraModel (float32, seed {seed})")
    model = hydra.utils.instantiate(copy.deepcopy(model_config))
    nparams = sum(p.numel() for p in model.parameters())
    timings["instantiate_s"] = time.perf_counter() - t
    log(f"{model_name}: {nparams / 1e6:.1f} M parameters in {timings['instantiate_s']:.1f} s")

    t = time.perf_counter()
    changed = randomize(model, gen)
    timings["randomize_s"] = time.perf_counter() - t
    log(f"{model_name}: randomised {changed}")

    checked = None
    if run_check:
        t = time.perf_counter()
        checked = check(model, tasks_config, elements, seed)
        timings["check_s"] = time.perf_counter() - t
        log(f"{model_name}: check {json.dumps(checked)}")

    t = time.perf_counter()
    raw, ema = state_dicts(model, gen)
    ckpt = MLIPInferenceCheckpoint(model_config=model_config, model_state_dict=raw,
                                   ema_state_dict=ema, tasks_config=tasks_config)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".part"
    torch.save(ckpt, tmp)
    os.replace(tmp, out)
    timings["save_s"] = time.perf_counter() - t
    size = os.path.getsize(out)
    log(f"{model_name}: wrote {out} ({size / 2**20:.0f} MiB) in {timings['save_s']:.1f} s")

    prov = {
        "model": model_name, "seed": seed, "path": os.path.abspath(out), "bytes": size,
        "sha256": sha256(out), "parameters": nparams,
        "fairchem_core": fairchem.core.__version__, "torch": torch.__version__,
        "configs_read": [{"repo": "facebookresearch/fairchem", "path": p, "commit": c}
                         for p, c in CONFIGS[model_name]],
        "differences_from_config": notes,
        "randomisation": changed, "routing_scale": ROUTING_SCALE,
        "element_references": "random U(%g, %g) eV per element (Z=0: 0) per energy task" % REF_RANGE,
        "model_state_dict": f"parameters of <= {SMALL_TENSOR} elements perturbed (not what fairchem "
                            "loads); ema_state_dict holds the weights",
        "check": checked, "timings_s": timings,
        "load_with": "fairchem.core.units.mlip_unit.load_predict_unit(path, inference_settings=..., "
                     "device='cpu'); see tools/fairchem_bridge/predict.py",
    }
    with open(out + ".json", "w") as f:
        json.dump(prov, f, indent=1)
    return prov


def reusable(model_name: str, out: str, seed: int) -> bool:
    """True when out and out.json exist and record the same model, seed and fairchem version."""
    import fairchem.core

    try:
        with open(out + ".json") as f:
            prov = json.load(f)
    except (OSError, ValueError):
        return False
    return (os.path.exists(out) and prov.get("model") == model_name and prov.get("seed") == seed
            and prov.get("fairchem_core") == fairchem.core.__version__
            and prov.get("bytes") == os.path.getsize(out))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--out", required=True, help="checkpoint path (PATH.json is written beside it)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--elements", default="C,Cu,Mg,O,H",
                    help="elements of the build-time check cell (comma separated)")
    ap.add_argument("--no-check", action="store_true", help="skip the build-time forward check")
    ap.add_argument("--reuse", action="store_true",
                    help="do nothing when PATH and PATH.json record the same model, seed and fairchem")
    args = ap.parse_args(argv)
    if args.reuse and reusable(args.model, args.out, args.seed):
        log(f"{args.model}: {args.out} is present (same model, seed, fairchem version): reused")
        return 0
    from ase.data import atomic_numbers

    elements = [e.strip() for e in args.elements.split(",") if e.strip()]
    bad = [e for e in elements if e not in atomic_numbers or atomic_numbers[e] >= MAX_NUM_ELEMENTS]
    if bad or not elements:
        ap.error(f"--elements: not elements with Z < {MAX_NUM_ELEMENTS}: {bad or args.elements!r}")
    build(args.model, args.out, args.seed, elements, run_check=not args.no_check)
    log("done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
