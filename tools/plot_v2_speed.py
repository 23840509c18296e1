#!/usr/bin/env python3
"""Step time and peak memory of model v2 on the GPU, edgeframe against fairchem, from one
side-by-side run's records: fairchem-speed.jsonl (bench/fairchem_gpu_speed.py) and v2.log
(bench/v2_gpu_measure.sh's engine column), as a PNG of two bar panels.

    python3 tools/plot_v2_speed.py RESULTS_DIR OUT.png [--precision tf32]
"""

import argparse
import json
import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# bench/v2_cases.py tags and bench/fairchem_gpu_speed.py structure names of the same boxes.
STRUCTURES = [("diamond512", "diamond_512", "diamond\n512 atoms"),
              ("bcc4394", "bcc_cu_4394", "bcc Cu\n4394 atoms"),
              ("diamond4096", "diamond_4096", "diamond\n4096 atoms")]


def engine_rows(log, precision):
    """tag -> (median ms, peak GB) from v2_gpu_measure.sh's engine lines."""
    rows = {}
    pat = re.compile(r'^(\w+) (\w+) rc 0: "n_edges": \d+ "median_s": ([0-9.e+-]+) "peak_bytes": (\d+)')
    for line in log.read_text().splitlines():
        m = pat.match(line)
        if m and m.group(2) == precision:
            rows[m.group(1)] = (1e3 * float(m.group(3)), int(m.group(4)) / 1e9)
    return rows


def fairchem_rows(jsonl, path):
    """structure -> (median ms, peak GB) of one fairchem path."""
    rows = {}
    for line in jsonl.read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "timing" and r.get("path") == path and r.get("status") == "ok":
            rows[r["structure"]] = (r["median_ms"], r["peak_gib"] * 2**30 / 1e9)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=pathlib.Path)
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--precision", default="tf32")
    args = ap.parse_args()
    ours = engine_rows(args.results / "v2.log", args.precision)
    theirs = fairchem_rows(args.results / "fairchem-speed.jsonl", f"fast_gpu_{args.precision}")
    missing = [t for t, s, _ in STRUCTURES if t not in ours or s not in theirs]
    if missing:
        raise SystemExit(f"plot_v2_speed: no edgeframe and fairchem pair for {', '.join(missing)} in {args.results}")
    labels = [label for _, _, label in STRUCTURES]
    x = range(len(STRUCTURES))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, k, unit in ((axes[0], 0, "step time (ms)"), (axes[1], 1, "peak GPU memory (GB)")):
        a = [ours[t][k] for t, _, _ in STRUCTURES]
        b = [theirs[s][k] for _, s, _ in STRUCTURES]
        ax.bar([i - 0.2 for i in x], a, 0.4, label=f"edgeframe engine ({args.precision})", color="tab:blue")
        ax.bar([i + 0.2 for i in x], b, 0.4, label=f"fairchem umas_fast_gpu ({args.precision})", color="tab:orange")
        for i in x:
            ax.text(i - 0.2, a[i], f"{a[i]:.0f}", ha="center", va="bottom", fontsize=8)
            ax.text(i + 0.2, b[i], f"{b[i]:.0f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels)
        ax.set_ylabel(unit)
    axes[0].legend(fontsize=8)
    fig.suptitle("UMA-S 1.2 (random weights, full size) on one H200, energy + forces + stress, same run")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"plot_v2_speed: wrote {args.out}")


if __name__ == "__main__":
    main()
