#!/usr/bin/env python3
"""Plot a gate run (tools/gate.py's gate.json): step time and peak memory per column, per case.

    python3 tools/plot_gate.py bench/results/h200_2026-12-01/gate-merged-calls1-4.json doc/gate-h200.png
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

COLUMNS = ["eager", "compile", "compile-tf32", "engine-fp32", "engine-tf32", "engine-tf32-keep", "engine-tf32-graph", "engine-b-tf32",
           "lammps-fp32", "lammps-tf32"]
COLORS = {"eager": "#999999", "compile": "#555555", "compile-tf32": "#333333", "engine-fp32": "#1f77b4", "engine-tf32": "#17becf",
          "engine-tf32-keep": "#0b5d66", "engine-tf32-graph": "#9edae5", "engine-b-tf32": "#c5b0d5",
          "lammps-fp32": "#2ca02c", "lammps-tf32": "#98df8a"}


def main(src, dst):
    run = json.load(open(src))
    rows = run["results"]
    tags = list(dict.fromkeys(r["tag"] for r in rows))
    fig, axes = plt.subplots(1, 2, figsize=(14, 4.8))
    width = 0.8 / len(COLUMNS)
    for k, col in enumerate(COLUMNS):
        for ax, key, scale in ((axes[0], "median_s", 1e3), (axes[1], "peak_bytes", 2.0 ** -30)):
            xs, ys = [], []
            for t, tag in enumerate(tags):
                r = next((r for r in rows if r["tag"] == tag and r["column"] == col), None)
                if r is None:
                    continue
                if r.get("error"):
                    ax.text(t + (k - len(COLUMNS) / 2 + 0.5) * width, 0, "x", ha="center", va="bottom",
                            color=COLORS[col], fontsize=9)
                    continue
                if r.get(key):
                    xs.append(t + (k - len(COLUMNS) / 2 + 0.5) * width)
                    ys.append(r[key] * scale)
            if xs:
                ax.bar(xs, ys, width, label=col, color=COLORS[col])
    labels = []
    for tag in tags:
        r = next(r for r in rows if r["tag"] == tag)
        labels.append(f"{tag}\n{r['n_atoms']} atoms\n{r['n_edges'] / 1e3:.0f}k edges")
    for ax, title in ((axes[0], "step time, energy + forces + virial (ms, median)"),
                      (axes[1], "peak GPU memory (GiB)")):
        ax.set_xticks(range(len(tags)))
        ax.set_xticklabels(labels, fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper left")
    gpu = run["env"].get("gpu") or "?"
    fig.suptitle(f"edgeframe gate on {gpu}, {run['env'].get('started', '')} (x: column failed, see the table)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)
    print(f"wrote {dst}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
