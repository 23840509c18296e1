#!/usr/bin/env python3
"""A random-weight model v2 potential of UMA-S's shape (L 2, mmax 2, C = H = Ce = 128, 4 layers,
32 Gaussians, r_cut 6 A, one task omat; experts 0: UMA's experts are merged into plain weights
before a step runs, so a step costs the same), for speed measurements where no fairchem
checkpoint can travel. Numbers from it mean nothing physically; for comparisons with fairchem,
convert a fairchem checkpoint instead (tools/convert_fairchem.py).

    python3 bench/v2_random_potential.py OUT.safetensors [--layers 4] [--lmax 2] [--seed 0]
"""

import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tools"))
from edgeframe_ref.config_v2 import ModelConfigV2, parameter_shapes_v2  # noqa: E402
from edgeframe_ref.potential_io_v2 import write_potential_v2  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--lmax", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    task = {"head": "omat", "rmsd": 1.342, "mean": 0.0, "element_references": None,
            "dataset_embedding": "omat", "default_charge": 0, "default_spin": 0}
    cfg = ModelConfigV2(r_cut=6.0, lmax=args.lmax, mmax=2, channels=128, hidden_channels=128,
                        edge_channels=128, layers=args.layers, num_gaussians=32, tasks={"omat": task},
                        default_task="omat", datasets=["omat"], heads=["omat"],
                        charge_balanced_channels=[0, 3])
    gen = torch.Generator().manual_seed(args.seed)
    tensors = {}
    for name, shape in parameter_shapes_v2(cfg).items():
        fan_in = shape[-1] if len(shape) > 1 else 1
        if name.endswith((".ln0.weight", ".ln1.weight", "norm1.weight", "norm2.weight", "final_norm.weight")):
            t = 1.0 + 0.1 * torch.randn(shape, generator=gen, dtype=torch.float64)
        elif len(shape) == 1:
            t = 0.1 * torch.randn(shape, generator=gen, dtype=torch.float64)
        else:
            t = torch.randn(shape, generator=gen, dtype=torch.float64) / fan_in ** 0.5
        tensors[name] = t
    write_potential_v2(args.out, cfg, tensors, dtype="float32",
                       provenance={"source": "bench/v2_random_potential.py", "seed": str(args.seed)})
    n = sum(t.numel() for t in tensors.values())
    print(f"v2_random_potential: {args.out}: L {cfg.lmax} layers {cfg.layers}, {n / 1e6:.2f} M values")


if __name__ == "__main__":
    main()
