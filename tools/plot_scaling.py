#!/usr/bin/env python3
"""Plot a 1-vs-2-GPU scaling run (bench/gpu_scaling.sh via scripts/gpu_session.sh scaling):
left, atom-steps/s per case; right, each case's time per force call split as pair_style
edgeframe's `timing detail` reports it (the slower rank's time per part).

    python3 tools/plot_scaling.py bench/results/h200_2026-11-30c/scaling.md \
        bench/results/h200_2026-11-30c/scaling-logs.tar.xz scaling.png

Also reads bench/gpu_exchange_ab.sh's table and logs (variants side by side: cases are named
"<variant> <case>", e.g. "direct strong-r24-2gpu"; VARIANTS=direct,... keeps only those and the
1-GPU baselines). The split is the loop's force calls without the setup call where the logs
have that line (timing detail since 2026-11-30g), else the mean over all calls.
"""
import os
import re
import sys
import tarfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PARTS = [("graph build + upload", "graph build + upload", "#bbbbbb"),
         ("band + radial + edge vectors + force sums", "band, radial, force sums", "#8c564b"),
         ("edge-frame kernels", "edge-frame kernels", "#1f77b4"),
         ("GEMMs + dense torch ops", "GEMMs + dense torch ops", "#17becf"),
         ("feature exchange", "feature exchange", "#d62728"),
         ("results to LAMMPS", "results to LAMMPS", "#2ca02c")]


def read_table(path):
    """case -> (gpus, atoms, ms/step, atom-steps/s) from the markdown table."""
    rows = {}
    for line in open(path):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and cells[2].isdigit() and cells[3].isdigit():    # exchange-ab: variant first
            cells = [f"{cells[0]} {cells[1]}"] + cells[2:]
        if len(cells) >= 5 and cells[1].isdigit() and cells[2].isdigit():
            try:
                rows[cells[0]] = (int(cells[1]), int(cells[2]), float(cells[3]), float(cells[4]))
            except ValueError:    # a failed case
                continue
    return rows


def read_splits(tarball):
    """case -> {part: ms per force call (max over ranks)} from the logs' timing lines."""
    splits = {}
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            path = member.name.split("/")
            name = path[-1]
            if not name.startswith("log.") or name.endswith(".stdout"):
                continue
            variant = path[-2] if len(path) >= 3 and path[-3] == "exchange-ab" else None
            text = tar.extractfile(member).read().decode()
            calls = re.search(r"edgeframe timing over (\d+) force calls", text)
            detail = re.search(r"edgeframe timing detail \(seconds, mean / max over ranks\): (.*)", text)
            # Logs since 2026-11-30g also give the loop's calls without the setup call (ms per call).
            loop = re.search(r"edgeframe timing detail per force call after the first \(\d+ calls; ms, mean / max over "
                             r"ranks\): (.*)", text)
            if not (calls and detail):
                continue
            parts = {}
            for item in (loop or detail).group(1).split("|"):
                m = re.match(r"\s*(.*?) ([\d.eE+-]+) / ([\d.eE+-]+)(?: \(.*\))?\s*$", item)
                if m:
                    parts[m.group(1)] = float(m.group(3)) if loop else 1e3 * float(m.group(3)) / int(calls.group(1))
            case = name[len("log."):]
            splits[case if variant is None else f"{'1 GPU' if variant == 'baseline' else variant} {case}"] = parts
    return splits


def main(table_path, tarball, dst):
    table, splits = read_table(table_path), read_splits(tarball)
    keep = os.environ.get("VARIANTS")
    cases = [c for c in table if c in splits and (not keep or c.split(" ")[0] in keep.split(",") + ["1"])]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    labels = [f"{c}\n{table[c][1]} atoms" for c in cases]
    left.bar(range(len(cases)), [table[c][3] for c in cases],
             color=["#1f77b4" if table[c][0] == 1 else "#ff7f0e" for c in cases])
    for k, c in enumerate(cases):
        left.text(k, table[c][3], f"{table[c][2]:.0f} ms", ha="center", va="bottom", fontsize=8)
    left.set_xticks(range(len(cases)), labels, rotation=30, ha="right", fontsize=7)
    left.set_ylabel("atom-steps/s (blue: 1 GPU, orange: 2 GPUs)")
    left.set_title("LAMMPS + edgeframe/kk, diamond, fp32")
    bottom = [0.0] * len(cases)
    for key, label, color in PARTS:
        vals = [splits[c].get(key, 0.0) for c in cases]
        right.bar(range(len(cases)), vals, bottom=bottom, color=color, label=label)
        bottom = [b + v for b, v in zip(bottom, vals)]
    right.set_xticks(range(len(cases)), labels, rotation=30, ha="right", fontsize=7)
    right.set_ylabel("ms per force call (slower rank)")
    right.set_title("where a force call goes (timing detail, loop calls)")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(dst, dpi=120)
    print(f"wrote {dst}: {len(cases)} cases")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
