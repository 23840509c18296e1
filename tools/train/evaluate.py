#!/usr/bin/env python3
"""Re-evaluate a potential file on the data splits, with train.py's own metrics, and compare
with a training run's metrics.json (e.g. a file written by tools/train/export.py on another
machine than the one that trained it):

    $EDGEFRAME_PYTHON tools/train/evaluate.py --element C --potential potentials/C-diamond.safetensors \
        --compare RUN_DIR/metrics.json [--splits val test] [--threads 2] [--out cpu-metrics.json] \
        [--parity parity.png]

The file is read through the validating reader (edgeframe_ref.potential_io.load_model, or
potential_io_v2.load_model_v2 for a format-version-2 file) in float64, as train.py evaluates its
written file; the loss uses the run's weights when --compare is given (a v2 model on the CPU
needs --eval-batch 8 or less within 24 GiB). Prints each RMSE / MAE and its relative difference
to the compared run. --parity draws train.py's test-set parity plot (plot_parity, same title)
from the same predictions, for runs whose parity.png did not come back.
"""

import argparse
import json
import pathlib
import sys
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from edgeframe_ref.potential_io import format_version, load_model  # noqa: E402
from edgeframe_ref.potential_io_v2 import load_model_v2  # noqa: E402
from train.dataset import build_splits  # noqa: E402
from train.train import metrics, parity_title, plot_parity  # noqa: E402

KEYS = ("energy_rmse_meV_atom", "energy_mae_meV_atom", "force_rmse_meV_A", "force_mae_meV_A",
        "virial_rmse_meV_atom", "loss")
FAMILY_KEYS = ("energy_rmse_meV_atom", "force_rmse_meV_A", "virial_rmse_meV_atom")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--element", required=True)
    ap.add_argument("--potential", required=True, type=pathlib.Path)
    ap.add_argument("--data", default=str(ROOT / "tools" / "data"))
    ap.add_argument("--cache", default=None, help="directory for packed neighbour lists")
    ap.add_argument("--splits", nargs="+", default=["test"], choices=["train", "val", "test"])
    ap.add_argument("--compare", type=pathlib.Path, default=None, help="a run's metrics.json")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--eval-batch", type=int, default=64)
    ap.add_argument("--out", type=pathlib.Path, default=None)
    ap.add_argument("--parity", type=pathlib.Path, default=None,
                    help="write the test split's parity plot here (as train.py's parity.png)")
    args = ap.parse_args()
    if args.parity is not None and "test" not in args.splits:
        ap.error("--parity needs the test split in --splits")
    torch.set_num_threads(args.threads)
    if format_version(args.potential) == 2:
        # model v2 in the trainer's calling convention, one element per file (train.py's species)
        from train.train import _wrap_v2
        model = _wrap_v2(load_model_v2(args.potential, dtype=torch.float64), [args.element])
    else:
        model = load_model(args.potential, dtype=torch.float64, device=torch.device("cpu"))
    ref = json.loads(args.compare.read_text()) if args.compare else None
    weights = (1.0, 1.0, 1.0)
    if ref is not None:
        weights = tuple(ref["training"]["weights"][k] for k in ("energy", "force", "virial"))
    splits = build_splits(args.data, args.element, [args.element], model.cfg.r_cut, args.cache)
    print(f"{args.potential}: data digest {splits['meta']['sha256_arrays'][:16]}..., "
          f"loss weights {weights}")
    results = {}
    for name in args.splits:
        t0 = time.time()
        m, pred = metrics(model, splits[name], args.eval_batch, weights)
        results[name] = m
        if name == "test" and args.parity is not None:
            plot_parity(splits[name], pred, args.parity, parity_title(args.element, m))
        print(f"{name}: {m['frames']} frames, {time.time() - t0:.0f} s")
        for k in KEYS:
            line = f"  {k:22s} {m[k]:12.6f}"
            if ref is not None and name in ref:
                line += f"  run {ref[name][k]:12.6f}  rel. diff {abs(m[k] - ref[name][k]) / abs(ref[name][k]):.1e}"
            print(line)
        if ref is not None and name in ref:
            worst = max(abs(v[k] - ref[name]["per_family"][f][k]) / abs(ref[name]["per_family"][f][k])
                        for f, v in m["per_family"].items() for k in FAMILY_KEYS)
            print(f"  per family: largest relative difference {worst:.1e}")
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
