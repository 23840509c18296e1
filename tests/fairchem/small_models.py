"""Small random-weight fairchem models built from the structure of fairchem's released UMA-S 1.2
and eSEN configs (configs/uma/training_release in fairchem's repository), saved as fairchem
inference checkpoints. Small widths keep a fp64 CPU prediction at a fraction of a second; the
released sizes are built by tools/fairchem_bridge/make_checkpoints.py.

Every parameter is drawn afresh (norm affine weights, LayerNorms, embeddings, routing MLP too),
so a converter that dropped or transposed any tensor would change the numbers.
"""

import hydra
import torch
from omegaconf import OmegaConf

from fairchem.core.units.mlip_unit.api.inference import MLIPInferenceCheckpoint

UMA_DATASETS = {"omat": "omat", "omol": "omol", "oc20": "oc20", "omat_rattle": "omat"}


def uma_like(experts=4, lmax=2, mmax=2, layers=2, channels=16, hidden=12, edge=16, gaussians=8,
             cutoff=4.5, model_id="UMA-S-1.2", balanced=(0, 1, 2), single_head=False):
    """UMA-S 1.2's structure (MoE backbone, composition embedding, charge balancing, per-dataset
    heads) at small widths. single_head: one head for every dataset (DatasetSpecificSingleHeadWrapper,
    as UMA-M 1.1's configs/uma/training_release/uma_md_*.yaml); balanced=(): no charge balancing."""
    backbone = dict(
        model="fairchem.core.models.uma.escn_moe.eSCNMDMoeBackbone", num_experts=experts,
        use_composition_embedding=experts > 0, moe_dropout=0.0, composition_dropout=0.0,
        moe_layer_type="pytorch", max_num_elements=100, sphere_channels=channels, lmax=lmax,
        mmax=mmax, otf_graph=True, max_neighbors=300, cutoff=cutoff, edge_channels=edge,
        distance_function="gaussian", num_distance_basis=gaussians, regress_forces=True,
        regress_stress=True, direct_forces=False, num_layers=layers, hidden_channels=hidden,
        norm_type="rms_norm_sh", act_type="gate", ff_type="spectral", chg_spin_emb_type="rand_emb",
        cs_emb_grad=True, dataset_mapping=dict(UMA_DATASETS), dataset_emb_grad=True,
        charge_balanced_channels=list(balanced))
    if single_head:
        heads = {"energyandforcehead": dict(
            module="fairchem.core.models.uma.escn_moe.DatasetSpecificSingleHeadWrapper",
            head_cls="fairchem.core.models.uma.escn_md.MLP_EFS_Head",
            head_kwargs={"wrap_property": False}, dataset_names=["omat", "omol", "oc20"])}
    else:
        heads = {"energyandforcehead": dict(
            module="fairchem.core.models.uma.escn_moe.DatasetSpecificMoEWrapper",
            head_cls="fairchem.core.models.uma.escn_md.MLP_EFS_Head",
            head_kwargs={"wrap_property": False}, dataset_mapping=dict(UMA_DATASETS))}
    config = {"_target_": "fairchem.core.models.base.HydraModel", "backbone": backbone,
              "heads": heads, "pass_through_head_outputs": True, "model_id": model_id}
    return config, ["omat", "omol", "oc20"]


def uma_m_like(**changes):
    """UMA-M 1.1's structure (configs/uma/training_release/backbone/K10L4.yaml: lmax 4, mmax 2;
    one head for all datasets; no charge balancing) at small widths and 3 of its 10 layers."""
    args = dict(experts=4, lmax=4, mmax=2, layers=3, model_id="UMA-M-1.1", balanced=(), single_head=True)
    args.update(changes)
    return uma_like(**args)


def esen_like(lmax=2, mmax=2, layers=2, channels=16, hidden=12, edge=16, gaussians=8, cutoff=4.5,
              charge_spin="pos_emb"):
    """eSEN conserving's structure (no experts, one shared head, dataset omol) at small widths."""
    backbone = dict(
        model="fairchem.core.models.uma.escn_moe.eSCNMDMoeBackbone", num_experts=0,
        max_num_elements=100, sphere_channels=channels, lmax=lmax, mmax=mmax, otf_graph=True,
        max_neighbors=300, cutoff=cutoff, edge_channels=edge, distance_function="gaussian",
        num_distance_basis=gaussians, regress_forces=True, regress_stress=True,
        direct_forces=False, num_layers=layers, hidden_channels=hidden, norm_type="rms_norm_sh",
        act_type="gate", ff_type="spectral", chg_spin_emb_type=charge_spin, cs_emb_grad=True,
        dataset_list=["omol"])
    heads = {"energyandforcehead": dict(
        module="fairchem.core.models.uma.escn_moe.DatasetSpecificSingleHeadWrapper",
        head_cls="fairchem.core.models.uma.escn_md.MLP_EFS_Head",
        head_kwargs={"wrap_property": False}, dataset_names=["omol"])}
    config = {"_target_": "fairchem.core.models.base.HydraModel", "backbone": backbone,
              "heads": heads, "pass_through_head_outputs": True}
    return config, ["omol"]


def _task(name, prop, dataset, rmsd, seed):
    task = {"_target_": "fairchem.core.units.mlip_unit.mlip_unit.Task", "name": name,
            "level": "atom" if prop == "forces" else "system", "property": prop, "loss_fn": None,
            "out_spec": {"dim": {"energy": [1], "forces": [3], "stress": [1, 9]}[prop],
                         "dtype": "float32"},
            "normalizer": {"_target_": "fairchem.core.modules.normalization.normalizer.Normalizer",
                           "mean": 0.0, "rmsd": rmsd},
            "datasets": [dataset]}
    if prop == "energy":
        refs = torch.randn(100, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
        task["element_references"] = {
            "_target_": "fairchem.core.modules.normalization.element_references.ElementReferences",
            "element_references": {"_target_": "torch.DoubleTensor", "_args_": [(3.0 * refs).tolist()]}}
    if prop == "forces":
        task["train_on_free_atoms"] = task["eval_on_free_atoms"] = True
    return task


def write_checkpoint(path, config, datasets, seed=0, rmsd=1.342):
    """Instantiate `config` with fairchem, perturb every parameter, save an inference checkpoint."""
    torch.manual_seed(seed)
    model = hydra.utils.instantiate(OmegaConf.create(config))
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.add_(0.3 * (p.abs().mean() + 0.1) * torch.randn_like(p))
    tasks = [_task(f"{d}_{prop}", prop, d, rmsd, seed + k)
             for k, d in enumerate(datasets) for prop in ("energy", "forces", "stress")]
    ema = torch.optim.swa_utils.AveragedModel(model).state_dict()
    torch.save(MLIPInferenceCheckpoint(model_config=config, model_state_dict=model.state_dict(),
                                       ema_state_dict=ema, tasks_config=tasks), str(path))
    return path
