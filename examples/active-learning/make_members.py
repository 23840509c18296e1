"""Stand-in ensemble for the active-learning example: the shipped carbon potential and copies of
it with every weight scaled by (1 + sigma * normal noise), written as member0..memberK-1. In a
real loop the members are models trained from different random seeds on the same data; these
copies only make the model deviation small and nonzero so that the example shows the mechanics.
usage: python examples/active-learning/make_members.py [--members 4] [--sigma 0.01] [--out DIR]"""
import argparse
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from edgeframe_ref import potential_io  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--members", type=int, default=4)
parser.add_argument("--sigma", type=float, default=0.01, help="relative weight noise of members 1..K-1")
parser.add_argument("--potential", default=str(REPO / "potentials" / "C-diamond.safetensors"))
parser.add_argument("--out", default=".")
args = parser.parse_args()

base = potential_io.load_model(args.potential)
gen = torch.Generator().manual_seed(2026)
for k in range(args.members):
    model = potential_io.load_model(args.potential)
    if k > 0:
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1 + args.sigma * torch.randn(p.shape, dtype=p.dtype, generator=gen))
    path = Path(args.out) / f"member{k}.safetensors"
    potential_io.write_potential(path, model, dtype=base.meta["dtype"], trained_precision=base.meta["trained_precision"], provenance=dict(
        base.meta.get("provenance", {}), note=f"example ensemble member {k}: weights x (1 + {args.sigma} N(0,1))"))
    print(f"wrote {path}")
