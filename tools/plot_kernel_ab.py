#!/usr/bin/env python3
"""Two builds of the engine side by side, from the logs of bench/edgeframe_bench's case mode
with --torch-profile (one log per build and case, as bench/results/h200_2026-12-04/call3.sh
writes them: OLD_DIR/<label>.log and NEW_DIR/<label>.log): the median step of each case and,
for one case, the fenced time of each Kokkos kernel, as a PNG of two panels.

    python3 tools/plot_kernel_ab.py OLD_DIR NEW_DIR OUT.png --cases umas-diamond512-tf32,... \
        --kernels-of umas-diamond4096-tf32
"""

import argparse
import json
import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_log(path):
    """(median step in ms, {kernel: fenced ms per step}) of one bench log."""
    text = pathlib.Path(path).read_text()
    median = None
    for line in text.splitlines():
        if line.startswith("RESULT "):
            median = 1e3 * json.loads(line[len("RESULT "):])["median_s"]
    kernels = {m.group(1): float(m.group(2))
               for m in re.finditer(r"^\s+edgeframe::(\w+)\s+([0-9.]+)\s", text, re.MULTILINE)}
    if median is None:
        raise SystemExit(f"plot_kernel_ab: {path} has no RESULT line")
    return median, kernels


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old_dir")
    ap.add_argument("new_dir")
    ap.add_argument("out")
    ap.add_argument("--cases", required=True, help="comma-separated log labels")
    ap.add_argument("--kernels-of", required=True, help="the label whose kernel split is drawn")
    ap.add_argument("--min-ms", type=float, default=1.0, help="kernels below this in both builds are left out")
    args = ap.parse_args()
    cases = args.cases.split(",")
    old = {c: read_log(pathlib.Path(args.old_dir) / f"{c}.log") for c in cases + [args.kernels_of]}
    new = {c: read_log(pathlib.Path(args.new_dir) / f"{c}.log") for c in cases + [args.kernels_of]}

    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1, 1.6]})
    ratios = [new[c][0] / old[c][0] for c in cases]
    ax0.barh(range(len(cases)), ratios, color="tab:blue")
    ax0.axvline(1.0, color="grey", lw=1)
    for k, (c, r) in enumerate(zip(cases, ratios)):
        ax0.text(r + 0.005, k, f"{r:.3f}  ({old[c][0]:.1f} -> {new[c][0]:.1f} ms)", va="center", fontsize=8)
    ax0.set_yticks(range(len(cases)), cases, fontsize=8)
    ax0.set_xlim(0.8, 1.15)
    ax0.set_xlabel("step, new / old (median, same call)")
    ax0.invert_yaxis()

    ko, kn = old[args.kernels_of][1], new[args.kernels_of][1]
    names = [n for n in ko if max(ko[n], kn.get(n, 0.0)) >= args.min_ms]
    names.sort(key=lambda n: -ko[n])
    y = range(len(names))
    ax1.barh([v - 0.2 for v in y], [ko[n] for n in names], height=0.4, label="old", color="tab:grey")
    ax1.barh([v + 0.2 for v in y], [kn.get(n, 0.0) for n in names], height=0.4, label="new", color="tab:blue")
    ax1.set_yticks(list(y), names, fontsize=8)
    ax1.invert_yaxis()
    ax1.set_xlabel(f"ms per step, a fence around each kernel ({args.kernels_of})")
    ax1.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
