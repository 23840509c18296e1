"""Model v2 in tools/train/train.py (`--model v2`): shapes of the trained potentials, fresh
weights, and the wrapper that lets the trainer call a v2 model like a v1 one.

A trained v2 potential is a one-task model (task "default", energy head "energy", no dataset
embedding, no experts, no charge balancing): fairchem's eSCN-MD backbone with its energy head
(doc/model.md "Model v2"), written in potential-file format version 2. The least-squares e0
per element becomes the task's element references, as fairchem's element references (fixed,
not trained). Charge and spin are the model's defaults (0, 0) and enter only through one
constant system-embedding vector.
"""

import math

import torch

from edgeframe_ref.config_v2 import ModelConfigV2, parameter_shapes_v2
from edgeframe_ref.elements import ELEMENTS
from edgeframe_ref.model_v2 import EdgeFrameModelV2

# Shapes of the v2 potentials (potentials/README.md says why): L 2 and mmax 2 as UMA-S and
# eSEN-sm, two layers, 64 channels; r_cut as v1's (Tersoff's 2.1 A and EAM's 5.5 A ranges).
# Carbon's Gaussians are 0.11 A apart on [0, 3.5] A: Tersoff's switching function lives in
# 1.8-2.1 A.
PRESETS_V2 = {
    "C": dict(r_cut=3.5, lmax=2, mmax=2, channels=64, hidden_channels=64, edge_channels=64,
              layers=2, num_gaussians=32),
    "Cu": dict(r_cut=5.5, lmax=2, mmax=2, channels=64, hidden_channels=64, edge_channels=64,
               layers=2, num_gaussians=32),
}
# Only as many element rows as the heaviest trained element needs (Cu: Z = 29).
MAX_NUM_ELEMENTS = 30
TASK = "default"
HEAD = "energy"


def make_config_v2(species, e0, hp):
    """ModelConfigV2 of a trained potential: hp from PRESETS_V2 (overrides applied), e0
    {symbol: eV} -> the task's element references (indexed by Z)."""
    refs = [0.0] * MAX_NUM_ELEMENTS
    for s in species:
        refs[ELEMENTS.index(s) + 1] = float(e0[s])
    task = dict(head=HEAD, rmsd=1.0, mean=0.0, element_references=refs, dataset_embedding=None,
                default_charge=0, default_spin=0)
    return ModelConfigV2(tasks={TASK: task}, default_task=TASK, heads=[HEAD],
                         dataset_embedding=False, max_num_elements=MAX_NUM_ELEMENTS,
                         **hp).validate()


def e0_of(cfg, species):
    refs = cfg.tasks[cfg.default_task]["element_references"]
    return {s: refs[ELEMENTS.index(s) + 1] for s in species}


class TrainableV2(torch.nn.Module):
    """A v2 model called as the trainer calls v1: forward(species index [N], edge_i, edge_j,
    edge_vec) -> per-atom energies. The system embedding is recomputed from the current
    weights at every call (set_system), so gradients reach the charge, spin and mix weights."""

    def __init__(self, cfg, species, model=None):
        """model: an EdgeFrameModelV2 to wrap (e.g. one read from a file); default a new one."""
        super().__init__()
        self.cfg = cfg
        self.m = EdgeFrameModelV2(cfg) if model is None else model
        self.register_buffer("z_of_species",
                             torch.tensor([ELEMENTS.index(s) + 1 for s in species], dtype=torch.int64))

    def forward(self, species, edge_i, edge_j, edge_vec):
        z = self.z_of_species[species]
        self.m.set_system(self.z_of_species)      # composition is used by experts only (none)
        return self.m(z, edge_i, edge_j, edge_vec)

    def named_tensors(self):
        return self.m.named_tensors()


def init_model_v2(cfg, species, seed):
    """Fresh weights: N(0, 1/fan_in) matrices (each SO(2) W_r, W_i 1/(2 fan_in)), N(0, 1)
    embeddings and charge / spin tables, zero biases, unit norm and LayerNorm weights; the
    head's last layer x0.1 so that the first energies sit close to the element references."""
    model = TrainableV2(cfg, species)
    gen = torch.Generator().manual_seed(seed)
    f64 = dict(dtype=torch.float64, generator=gen)
    with torch.no_grad():
        for name, shape in parameter_shapes_v2(cfg).items():
            p = model.m.p(name)
            leaf = name.rsplit(".", 1)[-1]
            if leaf == "bias":
                p.zero_()
            elif ".norm" in name or "final_norm" in name or ".ln" in name:
                p.fill_(1.0)
            elif name in ("atom_embedding", "edge.source_embedding", "edge.target_embedding") \
                    or name.startswith("system.") and name.endswith("_table"):
                p.copy_(torch.randn(shape, **f64))
            else:
                var = (0.5 if leaf in ("weight_r", "weight_i") else 1.0) / shape[-1]
                p.copy_(torch.randn(shape, **f64) * math.sqrt(var))
        model.m.p(f"heads.{HEAD}.lin2.weight").mul_(0.1)
    return model
