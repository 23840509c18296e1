"""Model hyperparameters and the parameter table (names and shapes) of doc/model.md.

`parameter_shapes(cfg)` is the single source of truth for tensor names and shapes: the model,
the random initialiser, the potential-file writer and the reader all use it, and
doc/potential-format.md lists the same table.
"""

import dataclasses
from collections import OrderedDict

from .elements import ELEMENTS

# Named shapes of DESIGN.md §2 (full size, used by the benchmark). Defaults not listed here
# come from ModelConfig.
SHAPES = {
    "L2": dict(lmax=2, mmax=1, channels=128, layers=4, r_cut=5.0, avg_neighbors=60.0),
    "L3": dict(lmax=3, mmax=1, channels=128, layers=4, r_cut=6.0, avg_neighbors=100.0),
}


@dataclasses.dataclass
class ModelConfig:
    species: list                  # element symbols; index in this list = species index
    r_cut: float = 5.0             # Angstrom
    lmax: int = 2                  # L
    mmax: int = 1                  # 1 or 2, <= L
    channels: int = 128            # C
    hidden_channels: int = 0       # C_h (SO(2) block); 0 -> C
    ffn_channels: int = 0          # C_f (feed-forward); 0 -> 2C
    layers: int = 4                # T
    n_rbf: int = 8
    envelope_p: int = 5
    edge_emb: int = 16             # per-layer species embedding width
    radial_hidden: int = 64        # H_r
    readout_hidden: int = 64       # H_o
    avg_neighbors: float = 60.0
    norm_eps: float = 1e-6
    e0: dict = dataclasses.field(default_factory=dict)   # eV per element; missing -> 0

    def __post_init__(self):
        if not self.hidden_channels:
            self.hidden_channels = self.channels
        if not self.ffn_channels:
            self.ffn_channels = 2 * self.channels
        self.e0 = {s: float(self.e0.get(s, 0.0)) for s in self.species}

    def validate(self):
        """Raise ValueError naming the first inconsistent hyperparameter."""
        if len(self.species) == 0:
            raise ValueError("species list is empty")
        seen = set()
        for s in self.species:
            if s not in ELEMENTS:
                raise ValueError(f"unknown species {s!r} (not a chemical element symbol)")
            if s in seen:
                raise ValueError(f"duplicate species {s!r} in {self.species}")
            seen.add(s)
        positive_ints = ("lmax", "channels", "hidden_channels", "ffn_channels", "layers",
                         "n_rbf", "envelope_p", "edge_emb", "radial_hidden", "readout_hidden")
        for k in positive_ints:
            v = getattr(self, k)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{k} must be a positive integer, got {v!r}")
        if self.mmax not in (1, 2) or self.mmax > self.lmax:
            raise ValueError(f"mmax must be 1 or 2 and <= lmax ({self.lmax}), got {self.mmax!r}")
        if self.envelope_p < 2:
            raise ValueError(f"envelope_p must be >= 2 (u'' must vanish), got {self.envelope_p}")
        for k in ("r_cut", "avg_neighbors", "norm_eps"):
            v = getattr(self, k)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not v > 0 \
                    or v != v or v == float("inf"):
                raise ValueError(f"{k} must be a finite positive number, got {v!r}")
        if set(self.e0) != set(self.species):
            raise ValueError(f"e0 has elements {sorted(self.e0)} but species are {self.species}")
        return self

    @property
    def num_species(self):
        return len(self.species)

    @property
    def num_coeffs(self):
        return (self.lmax + 1) ** 2

    def to_dict(self):
        return dataclasses.asdict(self)


HYPERPARAMETER_KEYS = [f.name for f in dataclasses.fields(ModelConfig)]


def radial_out(cfg):
    """G = sum_{m=0..mmax} (L+1-m) * 2C: one multiplier per (block m, l, input channel)."""
    return sum(cfg.lmax + 1 - m for m in range(cfg.mmax + 1)) * 2 * cfg.channels


def parameter_shapes(cfg):
    """OrderedDict name -> shape of every tensor of the model (file order)."""
    S, C, Ch, Cf = cfg.num_species, cfg.channels, cfg.hidden_channels, cfg.ffn_channels
    L, M, Hr, Ho = cfg.lmax, cfg.mmax, cfg.radial_hidden, cfg.readout_hidden
    out = OrderedDict()
    out["species_embedding"] = (S, C)
    for t in range(cfg.layers):
        p = f"layers.{t}."
        out[p + "norm_scale"] = (L + 1, C)
        out[p + "edge_embedding"] = (S, cfg.edge_emb)
        out[p + "radial.0.weight"] = (Hr, cfg.n_rbf + 2 * cfg.edge_emb)
        out[p + "radial.0.bias"] = (Hr,)
        out[p + "radial.1.weight"] = (Hr, Hr)
        out[p + "radial.1.bias"] = (Hr,)
        out[p + "radial.2.weight"] = (radial_out(cfg), Hr)
        out[p + "radial.2.bias"] = (radial_out(cfg),)
        out[p + "so2_1.m0.weight"] = ((L + 1) * Ch + L * Ch, (L + 1) * 2 * C)
        out[p + "so2_1.m0.bias"] = ((L + 1) * Ch + L * Ch,)
        for m in range(1, M + 1):
            out[p + f"so2_1.m{m}.weight_r"] = ((L + 1 - m) * Ch, (L + 1 - m) * 2 * C)
            out[p + f"so2_1.m{m}.weight_i"] = ((L + 1 - m) * Ch, (L + 1 - m) * 2 * C)
        out[p + "so2_2.m0.weight"] = ((L + 1) * C, (L + 1) * Ch)
        out[p + "so2_2.m0.bias"] = ((L + 1) * C,)
        for m in range(1, M + 1):
            out[p + f"so2_2.m{m}.weight_r"] = ((L + 1 - m) * C, (L + 1 - m) * Ch)
            out[p + f"so2_2.m{m}.weight_i"] = ((L + 1 - m) * C, (L + 1 - m) * Ch)
        out[p + "ffn_norm_scale"] = (L + 1, C)
        out[p + "ffn.lin1.weight"] = (L + 1, Cf, C)
        out[p + "ffn.lin1.bias"] = (Cf,)
        out[p + "ffn.gate.weight"] = (L * Cf, C)
        out[p + "ffn.gate.bias"] = (L * Cf,)
        out[p + "ffn.lin2.weight"] = (L + 1, C, Cf)
        out[p + "ffn.lin2.bias"] = (C,)
    out["readout.norm_scale"] = (C,)
    out["readout.0.weight"] = (Ho, C)
    out["readout.0.bias"] = (Ho,)
    out["readout.1.weight"] = (1, Ho)
    out["readout.1.bias"] = (1,)
    return out
