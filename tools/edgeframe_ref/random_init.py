"""Random-weight models for tests, goldens and benchmarks.

Scaled so that energies and forces are O(1) and no part of the model is degenerate:
  * weights ~ N(0, 1/fan_in) (SO(2) pairs W_r, W_i ~ N(0, 1/(2 fan_in)) each);
  * biases ~ N(0, 0.3^2), embeddings ~ N(0, 1);
  * norm scales ~ U(0.5, 1.5), so every scale entry matters;
  * e0 ~ U(-5, -1) eV per element.
Deterministic: one torch.Generator (CPU, float64) seeded with `seed`, parameters drawn in the
order of config.parameter_shapes.
"""

import torch

from .config import SHAPES, ModelConfig, parameter_shapes
from .model import EdgeFrameModel


def make_config(shape, species=("C", "Cu"), **overrides):
    """ModelConfig for a named shape ("L2", "L3") or "custom", with overrides."""
    base = dict(SHAPES[shape]) if shape in SHAPES else {}
    base.update(overrides)
    return ModelConfig(species=list(species), **base)


def init_random_(model, seed):
    cfg = model.cfg
    gen = torch.Generator().manual_seed(seed)
    f64 = dict(dtype=torch.float64, generator=gen)
    with torch.no_grad():
        for name, shape in parameter_shapes(cfg).items():
            if name.endswith("scale"):
                value = 0.5 + torch.rand(shape, **f64)
            elif name.endswith("bias"):
                value = 0.3 * torch.randn(shape, **f64)
            elif name.endswith("embedding"):
                value = torch.randn(shape, **f64)
            else:
                fan_in = shape[-1]
                var = 1.0 / fan_in
                if name.endswith("weight_r") or name.endswith("weight_i"):
                    var = 0.5 / fan_in
                value = torch.randn(shape, **f64) * var ** 0.5
            model.get_parameter(name).copy_(value)
        e0 = -1.0 - 4.0 * torch.rand(cfg.num_species, **f64)
    cfg.e0 = {s: float(e0[k]) for k, s in enumerate(cfg.species)}
    model.e0.copy_(e0)
    return model


def random_model(cfg, seed=0, dtype=torch.float64, device="cpu"):
    model = EdgeFrameModel(cfg)
    init_random_(model, seed)
    return model.to(dtype=dtype, device=device)
