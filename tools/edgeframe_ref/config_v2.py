"""Model v2 hyperparameters and its parameter table (names and shapes).

`parameter_shapes_v2(cfg)` is the single source of truth for v2 tensor names and shapes: the
reference model, the fairchem converter, the potential-file writer and reader use it, and
doc/potential-format.md ("Version 2") lists the same table.

Tables indexed by element are indexed by atomic number Z (rows 0..max_num_elements-1), as in
fairchem, so a converted model keeps every element it was built for.
"""

import dataclasses
import math
from collections import OrderedDict

from .elements import ELEMENTS

CHARGE_SPIN_EMBEDDINGS = ("rand_emb", "pos_emb", "lin_emb")


@dataclasses.dataclass
class ModelConfigV2:
    r_cut: float                     # Angstrom
    lmax: int                        # L
    mmax: int                        # 1 or 2, <= L
    channels: int                    # C (fairchem sphere_channels)
    hidden_channels: int             # H (SO(2) hidden, FFN hidden, head hidden)
    edge_channels: int               # Ce (radial MLP width, atom-pair embedding width)
    layers: int                      # T
    num_gaussians: int               # G: Gaussian basis on [0, r_cut]
    tasks: dict                      # name -> {head, rmsd, mean, element_references,
                                     #          dataset_embedding, default_charge, default_spin}
    default_task: str
    gaussian_width: float = 2.0      # width = gaussian_width * spacing of the Gaussian centres
    envelope_p: int = 5
    norm_eps: float = 1e-5
    edge_degree_rescale: float = 5.0
    max_num_elements: int = 100
    charge_spin_embedding: str = "rand_emb"
    dataset_embedding: bool = True   # a per-dataset vector in the system embedding
    datasets: list = dataclasses.field(default_factory=list)   # dataset embedding names
    heads: list = dataclasses.field(default_factory=list)      # head names
    experts: int = 0                 # K: UMA's mixture of linear experts (0 = plain weights)
    composition_embedding: bool = False
    composition_mean_include_self: bool = False   # UMA-S 1.2: mean over n + 1 (fairchem quirk)
    charge_balanced_channels: list = dataclasses.field(default_factory=lambda: [0, 0])
    spin_balanced_channels: list = dataclasses.field(default_factory=lambda: [0, 0])

    def validate(self):
        """Raise ValueError naming the first inconsistent hyperparameter."""
        for k in ("lmax", "channels", "hidden_channels", "edge_channels", "layers",
                  "num_gaussians", "envelope_p", "max_num_elements"):
            v = getattr(self, k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{k} must be a positive integer, got {v!r}")
        if self.mmax not in (1, 2) or self.mmax > self.lmax:
            raise ValueError(f"mmax must be 1 or 2 and <= lmax ({self.lmax}), got {self.mmax!r}")
        if self.num_gaussians < 2:
            raise ValueError("num_gaussians must be >= 2")
        if self.charge_spin_embedding not in CHARGE_SPIN_EMBEDDINGS:
            raise ValueError(f"charge_spin_embedding {self.charge_spin_embedding!r} is not one of "
                             f"{', '.join(CHARGE_SPIN_EMBEDDINGS)}")
        if self.experts < 0:
            raise ValueError("experts must be >= 0")
        if self.default_task not in self.tasks:
            raise ValueError(f"default_task {self.default_task!r} is not one of the tasks "
                             f"{sorted(self.tasks)}")
        for name, t in self.tasks.items():
            if t.get("head") not in self.heads:
                raise ValueError(f"task {name}: head {t.get('head')!r} is not one of {self.heads}")
            if self.dataset_embedding and t.get("dataset_embedding") not in self.datasets:
                raise ValueError(f"task {name}: dataset_embedding {t.get('dataset_embedding')!r} "
                                 f"is not one of {self.datasets}")
            rmsd = t.get("rmsd")
            if not isinstance(rmsd, (int, float)) or not math.isfinite(rmsd) or rmsd <= 0:
                raise ValueError(f"task {name}: rmsd must be a finite positive number, got {rmsd!r}")
            refs = t.get("element_references")
            if refs is not None and len(refs) != self.max_num_elements:
                raise ValueError(f"task {name}: element_references has {len(refs)} entries, "
                                 f"expected {self.max_num_elements}")
        for key in ("charge_balanced_channels", "spin_balanced_channels"):
            a, b = getattr(self, key)
            if not 0 <= a <= b <= self.channels:
                raise ValueError(f"{key} must be a channel range [a, b) within C, got {[a, b]}")
        return self

    @property
    def species(self):
        """Element symbols the model has a row for (Z = 1 .. max_num_elements - 1)."""
        return list(ELEMENTS[:self.max_num_elements - 1])

    def to_dict(self):
        return dataclasses.asdict(self)


def so2_shapes(cfg, prefix, c_in, c_out, with_gate):
    """SO(2) linear shapes; with experts every weight has a leading K (the bias does not)."""
    L, M, K = cfg.lmax, cfg.mmax, cfg.experts
    lead = (K,) if K > 0 else ()
    out = OrderedDict()
    m0_out = (L + 1) * c_out + (L * c_out if with_gate else 0)
    out[prefix + ".m0.weight"] = lead + (m0_out, (L + 1) * c_in)
    out[prefix + ".m0.bias"] = (m0_out,)
    for m in range(1, M + 1):
        for c in "ri":
            out[prefix + f".m{m}.weight_{c}"] = lead + ((L + 1 - m) * c_out, (L + 1 - m) * c_in)
    return out


def radial_mlp_shapes(prefix, c_in, hidden, c_out):
    out = OrderedDict()
    out[prefix + ".lin0.weight"] = (hidden, c_in)
    out[prefix + ".lin0.bias"] = (hidden,)
    out[prefix + ".ln0.weight"] = (hidden,)
    out[prefix + ".ln0.bias"] = (hidden,)
    out[prefix + ".lin1.weight"] = (hidden, hidden)
    out[prefix + ".lin1.bias"] = (hidden,)
    out[prefix + ".ln1.weight"] = (hidden,)
    out[prefix + ".ln1.bias"] = (hidden,)
    out[prefix + ".lin2.weight"] = (c_out, hidden)
    out[prefix + ".lin2.bias"] = (c_out,)
    return out


def radial_out_v2(cfg):
    """One multiplier per (block m, l, input channel) of SO(2) linear 1 (input 2C)."""
    return sum(cfg.lmax + 1 - m for m in range(cfg.mmax + 1)) * 2 * cfg.channels


def parameter_shapes_v2(cfg):
    """OrderedDict name -> shape of every tensor of a v2 model (file order)."""
    Z, C, H, Ce, L = cfg.max_num_elements, cfg.channels, cfg.hidden_channels, cfg.edge_channels, cfg.lmax
    edge_in = cfg.num_gaussians + 2 * Ce
    out = OrderedDict()
    out["atom_embedding"] = (Z, C)
    out["edge.source_embedding"] = (Z, Ce)
    out["edge.target_embedding"] = (Z, Ce)
    if cfg.charge_spin_embedding == "rand_emb":
        out["system.charge_table"] = (201, C)
        out["system.spin_table"] = (101, C)
    elif cfg.charge_spin_embedding == "pos_emb":
        out["system.charge_frequencies"] = (C // 2,)
        out["system.spin_frequencies"] = (C // 2,)
    else:
        for which in ("charge", "spin"):
            out[f"system.{which}_linear.weight"] = (C, 1)
            out[f"system.{which}_linear.bias"] = (C,)
    for d in (cfg.datasets if cfg.dataset_embedding else []):
        out[f"system.dataset.{d}"] = (C,)
    out["system.mix.weight"] = (C, (3 if cfg.dataset_embedding else 2) * C)
    out["system.mix.bias"] = (C,)
    if cfg.experts > 0:
        K = cfg.experts
        route_in = (2 if cfg.composition_embedding else 1) * C
        for k, (o, i) in enumerate([(2 * K, route_in), (2 * K, 2 * K), (K, 2 * K)]):
            out[f"mole.routing.{k}.weight"] = (o, i)
            out[f"mole.routing.{k}.bias"] = (o,)
        if cfg.composition_embedding:
            out["mole.composition_embedding"] = (Z, C)
    out.update(radial_mlp_shapes("edge_degree.radial", edge_in, Ce, (L + 1) * C))
    for t in range(cfg.layers):
        p = f"layers.{t}"
        out[p + ".norm1.weight"] = (L + 1, C)
        out[p + ".norm1.bias"] = (C,)
        out.update(radial_mlp_shapes(p + ".radial", edge_in, Ce, radial_out_v2(cfg)))
        out.update(so2_shapes(cfg, p + ".so2_1", 2 * C, H, True))
        out.update(so2_shapes(cfg, p + ".so2_2", H, C, False))
        out[p + ".norm2.weight"] = (L + 1, C)
        out[p + ".norm2.bias"] = (C,)
        out[p + ".ffn.gate.weight"] = (L * H, C)
        out[p + ".ffn.gate.bias"] = (L * H,)
        out[p + ".ffn.lin1.weight"] = (L + 1, H, C)
        out[p + ".ffn.lin1.bias"] = (H,)
        out[p + ".ffn.lin2.weight"] = (L + 1, C, H)
        out[p + ".ffn.lin2.bias"] = (C,)
    out["final_norm.weight"] = (L + 1, C)
    out["final_norm.bias"] = (C,)
    for h in cfg.heads:
        for k, (o, i) in enumerate([(H, C), (H, H), (1, H)]):
            out[f"heads.{h}.lin{k}.weight"] = (o, i)
            out[f"heads.{h}.lin{k}.bias"] = (o,)
    return out
