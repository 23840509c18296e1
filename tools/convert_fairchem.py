#!/usr/bin/env python3
"""Convert a fairchem UMA / eSEN checkpoint (fairchem-core 2.24) into an edgeframe v2 potential.

    $EDGEFRAME_FAIRCHEM_PYTHON tools/convert_fairchem.py uma-s-1p2.pt uma-s-1p2.safetensors

Runs in the fairchem venv (the checkpoint is a torch pickle of fairchem classes; LAMMPS never
needs fairchem). Reads the inference weights (the EMA weights, as fairchem's predict does),
maps every tensor to model v2's table (tools/edgeframe_ref/config_v2.py), and writes the file
with every hyperparameter and the checkpoint's provenance in its header. What this model
family cannot express is refused with an error naming the setting, and no file is written.
"""

import argparse
import hashlib
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgeframe_ref.config_v2 import ModelConfigV2, parameter_shapes_v2  # noqa: E402
from edgeframe_ref.potential_io_v2 import write_potential_v2  # noqa: E402

BACKBONES = ("fairchem.core.models.uma.escn_moe.eSCNMDMoeBackbone", "escnmd_moe_backbone",
             "fairchem.core.models.uma.escn_md.eSCNMDBackbone", "escnmd_backbone")
HEAD_WRAPPERS = ("fairchem.core.models.uma.escn_moe.DatasetSpecificMoEWrapper",
                 "fairchem.core.models.uma.escn_moe.DatasetSpecificSingleHeadWrapper")
HEAD_CLASSES = ("fairchem.core.models.uma.escn_md.MLP_EFS_Head",
                "fairchem.core.models.uma.escn_md.MLP_Energy_Head")
# Backbone settings this converter reproduces, with the one value each must have.
REQUIRED = {"norm_type": "rms_norm_sh", "act_type": "gate", "ff_type": "spectral",
            "distance_function": "gaussian", "direct_forces": False}
MOE_REQUIRED = {"moe_type": "so2", "moe_expert_coefficient_norm": "softmax", "layers_moe": None,
                "moe_single": False}
# fairchem's defaults for the backbone keys a config may leave out.
DEFAULTS = {"max_num_elements": 100, "sphere_channels": 128, "lmax": 2, "mmax": 2, "cutoff": 5.0,
            "edge_channels": 128, "distance_function": "gaussian", "num_distance_basis": 512,
            "direct_forces": True, "num_layers": 2, "hidden_channels": 128,
            "norm_type": "rms_norm_sh", "act_type": "gate", "ff_type": "grid",
            "chg_spin_emb_type": "pos_emb", "use_dataset_embedding": True, "num_experts": 0,
            "use_composition_embedding": False, "moe_type": "so2",
            "moe_expert_coefficient_norm": "softmax", "layers_moe": None, "moe_single": False,
            "charge_balanced_channels": None, "spin_balanced_channels": None}


class ConversionError(ValueError):
    """A checkpoint this converter cannot turn into model v2 (the message names the setting)."""


def plain(x):
    """omegaconf containers -> plain Python."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf
        if isinstance(x, (DictConfig, ListConfig)):
            return OmegaConf.to_container(x, resolve=True)
    except ImportError:
        pass
    return x


def inference_state(ckpt):
    """The weights fairchem's predict uses: the EMA average when present."""
    ema = getattr(ckpt, "ema_state_dict", None)
    if ema:
        return {k[len("module."):]: v for k, v in ema.items() if k.startswith("module.")}
    return dict(ckpt.model_state_dict)


def channel_range(channels, name):
    if not channels:
        return [0, 0]
    ch = sorted(int(c) for c in channels)
    if ch != list(range(ch[0], ch[-1] + 1)):
        raise ConversionError(f"backbone.{name} {channels} is not a contiguous channel range")
    return [ch[0], ch[-1] + 1]


def backbone_settings(model_config):
    bb = plain(model_config.get("backbone"))
    if not isinstance(bb, dict):
        raise ConversionError("model_config has no backbone section")
    cls = bb.get("model")
    if cls not in BACKBONES:
        raise ConversionError(f"backbone class {cls!r} is not supported (supported: eSCN-MD "
                              f"backbones {', '.join(BACKBONES)})")
    s = dict(DEFAULTS)
    s.update({k: v for k, v in bb.items() if k != "model"})
    for key, want in REQUIRED.items():
        if s.get(key) != want:
            what = "a direct-force model (forces not from the energy)" if key == "direct_forces" \
                else f"{key} {s.get(key)!r}"
            raise ConversionError(f"backbone.{key} = {s.get(key)!r}: {what} is not implemented "
                                  f"(model v2 needs {key} = {want!r})")
    if s.get("direct_stress"):
        raise ConversionError("backbone.direct_stress = True: a direct-stress model is not implemented")
    if int(s["num_experts"]) > 0:
        for key, want in MOE_REQUIRED.items():
            if s.get(key) != want:
                raise ConversionError(f"backbone.{key} = {s.get(key)!r} is not implemented "
                                      f"(model v2's mixture of experts needs {want!r})")
    if int(s["mmax"]) not in (1, 2) or int(s["mmax"]) > int(s["lmax"]):
        raise ConversionError(f"backbone.mmax = {s['mmax']} is not implemented (1 or 2, <= lmax)")
    return cls, s


def tasks_from(ckpt_tasks, dataset_mapping, fail_head):
    """Energy tasks -> {dataset: {head, rmsd, mean, element_references, ...}}."""
    import hydra
    out = {}
    for tc in ckpt_tasks:
        # fairchem's predict builds its tasks with float64 as the default dtype when it runs in
        # float64; under float32 the normalizer's rmsd would be rounded (1.342 -> 1.3420000076).
        prev = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            task = hydra.utils.instantiate(tc)
        finally:
            torch.set_default_dtype(prev)
        if task.property != "energy":
            continue
        norm = task.normalizer
        refs = task.element_references
        for d in task.datasets:
            target = dataset_mapping.get(d, d) if dataset_mapping else d
            out[d] = {"head": fail_head(target),
                      "rmsd": float(norm.rmsd) if norm is not None else 1.0,
                      "mean": float(norm.mean) if norm is not None else 0.0,
                      "element_references": (None if refs is None else
                                             [float(v) for v in refs.element_references.double()]),
                      "dataset_embedding": target,
                      "default_charge": 0,
                      "default_spin": 1 if d == "omol" else 0}
    if not out:
        raise ConversionError("the checkpoint has no energy task (tasks_config)")
    return out


def convert(ckpt_path):
    """-> (ModelConfigV2, tensors, provenance). Raises ConversionError."""
    ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
    model_config = plain(ckpt.model_config)
    cls, s = backbone_settings(model_config)
    sd = inference_state(ckpt)
    L, M, C = int(s["lmax"]), int(s["mmax"]), int(s["sphere_channels"])
    H, K = int(s["hidden_channels"]), int(s["num_experts"])
    mapping = s.get("dataset_mapping") or ({d: d for d in s["dataset_list"]}
                                           if s.get("dataset_list") else {})

    heads_cfg = model_config.get("heads") or {}
    if len(heads_cfg) != 1:
        raise ConversionError(f"model has {len(heads_cfg)} output heads {sorted(heads_cfg)}; "
                              "model v2 takes one energy head (possibly per task)")
    (head_key, head), = heads_cfg.items()
    wrapper, head_cls = head.get("module"), head.get("head_cls")
    if head_cls not in HEAD_CLASSES:
        raise ConversionError(f"head {head_key}: head_cls {head_cls!r} is not supported "
                              f"(supported: {', '.join(HEAD_CLASSES)}; a direct-force head cannot "
                              "be converted)")
    if wrapper not in HEAD_WRAPPERS:
        raise ConversionError(f"head {head_key}: module {wrapper!r} is not supported "
                              f"(supported: {', '.join(HEAD_WRAPPERS)})")
    per_dataset_heads = wrapper.endswith("DatasetSpecificMoEWrapper")
    head_mapping = head.get("dataset_mapping") or {d: d for d in (head.get("dataset_names") or [])}
    unique_heads = sorted(set(head_mapping.values())) if per_dataset_heads else ["shared"]

    def head_of(target):
        if not per_dataset_heads:
            return "shared"
        if target not in unique_heads:
            raise ConversionError(f"dataset {target!r} has no head (heads: {unique_heads})")
        return target

    tasks = tasks_from(ckpt.tasks_config, mapping, head_of)
    cfg = ModelConfigV2(
        r_cut=float(s["cutoff"]), lmax=L, mmax=M, channels=C, hidden_channels=H,
        edge_channels=int(s["edge_channels"]), layers=int(s["num_layers"]),
        num_gaussians=int(s["num_distance_basis"]), tasks=tasks,
        default_task="omat" if "omat" in tasks else sorted(tasks)[0],
        max_num_elements=int(s["max_num_elements"]),
        charge_spin_embedding=s["chg_spin_emb_type"],
        dataset_embedding=bool(s["use_dataset_embedding"]),
        datasets=sorted(mapping) if s["use_dataset_embedding"] else [],
        heads=unique_heads, experts=K,
        composition_embedding=bool(s["use_composition_embedding"]) and K > 0,
        composition_mean_include_self=model_config.get("model_id") == "UMA-S-1.2",
        charge_balanced_channels=channel_range(s["charge_balanced_channels"], "charge_balanced_channels"),
        spin_balanced_channels=channel_range(s["spin_balanced_channels"], "spin_balanced_channels"))
    cfg.validate()

    used = set()

    def take(name):
        if name not in sd:
            raise ConversionError(f"checkpoint has no tensor {name!r} (backbone class {cls})")
        used.add(name)
        return sd[name].detach().to(torch.float64)

    t = {}
    bb = "backbone."
    t["atom_embedding"] = take(bb + "sphere_embedding.weight")
    t["edge.source_embedding"] = take(bb + "source_embedding.weight")
    t["edge.target_embedding"] = take(bb + "target_embedding.weight")
    kind = cfg.charge_spin_embedding
    for which in ("charge", "spin"):
        src = f"{bb}{which}_embedding."
        if kind == "rand_emb":
            t[f"system.{which}_table"] = take(src + "rand_emb.weight")
        elif kind == "pos_emb":
            t[f"system.{which}_frequencies"] = take(src + "W")
        else:
            t[f"system.{which}_linear.weight"] = take(src + "lin_emb.weight")
            t[f"system.{which}_linear.bias"] = take(src + "lin_emb.bias")
    for d in cfg.datasets:
        t[f"system.dataset.{d}"] = take(f"{bb}dataset_embedding.dataset_emb_dict.{d}.weight")[0]
    t["system.mix.weight"] = take(bb + "mix_csd.weight")
    t["system.mix.bias"] = take(bb + "mix_csd.bias")
    if K > 0:
        for k, idx in enumerate((0, 2, 4)):
            t[f"mole.routing.{k}.weight"] = take(f"{bb}routing_mlp.{idx}.weight")
            t[f"mole.routing.{k}.bias"] = take(f"{bb}routing_mlp.{idx}.bias")
        if cfg.composition_embedding:
            t["mole.composition_embedding"] = take(bb + "composition_embedding.weight")

    def radial(dst, src):
        for ours, theirs in (("lin0", 0), ("ln0", 1), ("lin1", 3), ("ln1", 4), ("lin2", 6)):
            t[f"{dst}.{ours}.weight"] = take(f"{src}.net.{theirs}.weight")
            t[f"{dst}.{ours}.bias"] = take(f"{src}.net.{theirs}.bias")

    def linear_weight(src):
        """fairchem Linear ('.weight') or MOLE ('.weights', [K, out, in]) weight."""
        return take(src + ".weights") if K > 0 else take(src + ".weight")

    def so2(dst, src, c_out, gates):
        w, b = linear_weight(src + ".fc_m0"), take(src + ".fc_m0.bias")
        if gates:   # fairchem: gate scalars first; model v2 (as v1): m = 0 outputs first
            g = L * c_out
            w = torch.cat([w[..., g:, :], w[..., :g, :]], dim=-2)
            b = torch.cat([b[g:], b[:g]])
        t[dst + ".m0.weight"], t[dst + ".m0.bias"] = w.contiguous(), b
        for m in range(1, M + 1):
            fc = linear_weight(f"{src}.so2_m_conv.{m - 1}.fc")
            half = fc.shape[-2] // 2
            t[dst + f".m{m}.weight_r"] = fc[..., :half, :].contiguous()
            t[dst + f".m{m}.weight_i"] = fc[..., half:, :].contiguous()

    radial("edge_degree.radial", bb + "edge_degree_embedding.rad_func")
    for layer in range(cfg.layers):
        p, q = f"layers.{layer}", f"{bb}blocks.{layer}"
        t[p + ".norm1.weight"] = take(q + ".norm_1.affine_weight")
        t[p + ".norm1.bias"] = take(q + ".norm_1.affine_bias")
        radial(p + ".radial", q + ".edge_wise.so2_conv_1.rad_func")
        so2(p + ".so2_1", q + ".edge_wise.so2_conv_1", H, True)
        so2(p + ".so2_2", q + ".edge_wise.so2_conv_2", C, False)
        t[p + ".norm2.weight"] = take(q + ".norm_2.affine_weight")
        t[p + ".norm2.bias"] = take(q + ".norm_2.affine_bias")
        t[p + ".ffn.gate.weight"] = take(q + ".atom_wise.scalar_mlp.0.weight")
        t[p + ".ffn.gate.bias"] = take(q + ".atom_wise.scalar_mlp.0.bias")
        for k in (1, 2):
            t[p + f".ffn.lin{k}.weight"] = take(q + f".atom_wise.so3_linear_{k}.weight")
            t[p + f".ffn.lin{k}.bias"] = take(q + f".atom_wise.so3_linear_{k}.bias")
    t["final_norm.weight"] = take(bb + "norm.affine_weight")
    t["final_norm.bias"] = take(bb + "norm.affine_bias")

    hp = f"output_heads.{head_key}.head.energy_block"
    for h in cfg.heads:
        for k, idx in enumerate((0, 2, 4)):
            if per_dataset_heads:
                # DatasetSpecificMoEWrapper: one expert per head target, the bias shared.
                expert = sorted(set(head_mapping.values())).index(h)
                t[f"heads.{h}.lin{k}.weight"] = take(f"{hp}.{idx}.weights")[expert]
            else:
                t[f"heads.{h}.lin{k}.weight"] = take(f"{hp}.{idx}.weight")
            t[f"heads.{h}.lin{k}.bias"] = take(f"{hp}.{idx}.bias")

    ignored = {k for k in sd if k not in used and not k.split(".")[-1].startswith("Jd_")
               and "dataset_emb_dict" not in k and k != "n_averaged"}
    if ignored:
        raise ConversionError(f"checkpoint tensors not understood by model v2: {sorted(ignored)[:8]}")
    shapes = parameter_shapes_v2(cfg)
    for k, shape in shapes.items():
        if tuple(t[k].shape) != tuple(shape):
            raise ConversionError(f"tensor {k}: checkpoint gives shape {tuple(t[k].shape)}, "
                                  f"model v2 expects {tuple(shape)}")
    with open(ckpt_path, "rb") as fh:
        digest = hashlib.sha256(fh.read()).hexdigest()
    try:
        from importlib.metadata import version
        fc_version = version("fairchem-core")
    except Exception:   # noqa: BLE001 - provenance only
        fc_version = "unknown"
    prov = {"source": "fairchem checkpoint", "checkpoint": os.path.basename(ckpt_path),
            "checkpoint_sha256": digest, "fairchem_core": fc_version,
            "model_id": str(model_config.get("model_id", "")), "backbone": cls,
            "head": f"{wrapper} / {head_cls}"}
    return cfg, t, prov


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", help="fairchem inference checkpoint (.pt)")
    ap.add_argument("output", help="edgeframe v2 potential (.safetensors)")
    ap.add_argument("--dtype", default="float64", choices=["float64", "float32"],
                    help="storage dtype of the written tensors (default float64: the checkpoint's "
                         "float32 weights are stored exactly)")
    args = ap.parse_args(argv)
    print(f"convert_fairchem: reading {args.checkpoint}", flush=True)
    try:
        cfg, tensors, prov = convert(args.checkpoint)
    except ConversionError as err:
        print(f"convert_fairchem: ERROR: {args.checkpoint}: {err} (no file written)", file=sys.stderr)
        return 2
    n = sum(v.numel() for v in tensors.values())
    print(f"convert_fairchem: {prov['backbone']} L={cfg.lmax} mmax={cfg.mmax} C={cfg.channels} "
          f"layers={cfg.layers} experts={cfg.experts} tasks={sorted(cfg.tasks)}; "
          f"{len(tensors)} tensors, {n / 1e6:.1f} M values", flush=True)
    write_potential_v2(args.output, cfg, tensors, dtype=args.dtype, provenance=prov)
    print(f"convert_fairchem: wrote {args.output}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
