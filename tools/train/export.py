#!/usr/bin/env python3
"""Write a potential file from a training run's best.pt and provenance.json.

For runs made where the safetensors package was missing (train.py then stops short of the
file):  $EDGEFRAME_PYTHON tools/train/export.py RUN_DIR OUT.safetensors [--store-dtype float64]
"""

import argparse
import json
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from edgeframe_ref.config import ModelConfig  # noqa: E402
from edgeframe_ref.model import EdgeFrameModel  # noqa: E402
from edgeframe_ref.potential_io import write_potential  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("run", type=pathlib.Path)
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--store-dtype", default="float64", choices=("float64", "float32"))
    ap.add_argument("--trained-precision", default="float64")
    args = ap.parse_args()
    ckpt = torch.load(args.run / "best.pt", map_location="cpu")
    model = EdgeFrameModel(ModelConfig(**ckpt["cfg"]))
    model.load_state_dict({k: v.to(torch.float64) for k, v in ckpt["state"].items()})
    prov = json.loads((args.run / "provenance.json").read_text())
    write_potential(args.out, model, dtype=args.store_dtype,
                    trained_precision=args.trained_precision, provenance=prov)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
