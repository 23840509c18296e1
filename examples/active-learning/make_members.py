"""Stand-in ensemble for the active-learning example: the shipped carbon potential (model v2 or
v1) and copies of it with every weight scaled by (1 + sigma * normal noise), written as
member0..memberK-1. In a real loop the members are models trained from different random seeds
on the same data; these copies only make the model deviation small and nonzero so that the
example shows the mechanics.
usage: python examples/active-learning/make_members.py [--members 4] [--sigma 0.01] [--out DIR]"""
import argparse
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from edgeframe_ref import potential_io, potential_io_v2  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--members", type=int, default=4)
parser.add_argument("--sigma", type=float, default=0.01, help="relative weight noise of members 1..K-1")
parser.add_argument("--potential", default=str(REPO / "potentials" / "C-diamond-v2.safetensors"))
parser.add_argument("--out", default=".")
args = parser.parse_args()

gen = torch.Generator().manual_seed(2026)


def noisy(k, t):
    """Member k's copy of weight t: member 0 is the potential itself."""
    return t if k == 0 else t * (1 + args.sigma * torch.randn(t.shape, dtype=t.dtype, generator=gen))


is_v2 = potential_io.format_version(args.potential) == potential_io_v2.FORMAT_VERSION_V2
if is_v2:
    cfg, base, meta = potential_io_v2.read_potential_v2(args.potential)
else:  # model v1: perturbed in place from its own weights, kept here
    model = potential_io.load_model(args.potential)
    base = {name: p.detach().clone() for name, p in model.named_parameters()}
for k in range(args.members):
    path = Path(args.out) / f"member{k}.safetensors"
    note = f"example ensemble member {k}: weights x (1 + {args.sigma} N(0,1))"
    if is_v2:
        tensors = {name: noisy(k, t.to(torch.float64)) for name, t in base.items()}
        potential_io_v2.write_potential_v2(path, cfg, tensors, dtype=meta["dtype"],
                                           provenance=dict(meta["provenance"], note=note))
    else:
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(noisy(k, base[name]))
        potential_io.write_potential(path, model, dtype=model.meta["dtype"], trained_precision=model.meta["trained_precision"],
                                     provenance=dict(model.meta.get("provenance", {}), note=note))
    print(f"wrote {path}")
