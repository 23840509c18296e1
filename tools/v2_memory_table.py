#!/usr/bin/env python3
"""The table of bench/v2_memory.sh: per run its case, activations plan, step time, measured peak
(torch's allocator, the Kokkos workspace and the graph; on host backends, which do not track
torch's allocations, the workspace and the graph only), the memory model's peak, and max |dF| / max |F| against the keep run of the same case.

    python3 tools/v2_memory_table.py OUTDIR      (writes OUTDIR/memory.md and OUTDIR/memory.json)
"""
import json
import pathlib
import re
import sys

import numpy as np

RUNS = ["small-keep", "small-recompute", "small-stream", "small-auto-budget", "large-auto"]


def result(log):
    """The RESULT {json} line of one bench log, or {"error": ...}."""
    if not log.exists():
        return {"error": "no log"}
    for line in log.read_text().splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": "no RESULT line"}


def lammps_result(log):
    """The plan, the model's peak and the one step's time of bench/v2_memory.sh's LAMMPS run (run 1)."""
    if not log.exists():
        return {"error": "no log"}
    text = log.read_text()
    plan = re.search(r"edgeframe activations auto on rank 0: (.*?) \(memory model's peak ([\d.e+-]+) GB", text)
    loop = re.search(r"Loop time of ([\d.e+-]+) on \d+ procs for 1 steps with (\d+) atoms", text)
    if not loop:
        return {"error": "no Loop time (see the log)"}
    r = {"engine": "LAMMPS edgeframe/kk", "n_atoms": int(loop.group(2)), "n_edges": None,
         "median_s": float(loop.group(1)), "activations": plan.group(1) if plan else "keep (no plan line)",
         "predicted_peak_bytes": float(plan.group(2)) * 1e9 if plan else None, "peak_bytes": None}
    edges = re.findall(r"\| edges ([\d.]+) /", text)
    if edges:
        r["n_edges"] = int(float(edges[-1]))
    return r


def main():
    out = pathlib.Path(sys.argv[1])
    rows = []
    keep = None
    for name in RUNS + ["large-lammps"]:
        r = lammps_result(out / f"{name}.log") if name == "large-lammps" else result(out / f"{name}.log")
        r["run"] = name
        forces = out / f"{name}.forces"
        if "error" not in r and forces.exists():
            f = np.fromfile(forces, dtype="<f8").reshape(-1, 3)
            if name == "small-keep":
                keep = f
            elif name.startswith("small") and keep is not None and keep.shape == f.shape:
                r["max_dF_rel_to_keep"] = float(np.abs(f - keep).max() / np.abs(keep).max())
        rows.append(r)
    (out / "memory.json").write_text(json.dumps(rows, indent=1) + "\n")
    lines = ["| run | atoms | edges | plan | step | peak (measured) | model | max dF / max F vs keep |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['run']} | | | error: {r['error']} | | | | |")
            continue
        if r.get("peak_bytes") is None:
            peak = "-"
        else:
            peak = f"{r['peak_bytes'] / 1e9:.2f} GB"
            if r.get("engine") != "Cuda":   # torch's host allocations are not tracked
                peak += " (workspace and graph only)"
        model = f"{r['predicted_peak_bytes'] / 1e9:.2f} GB" if r.get("predicted_peak_bytes") else "-"
        dF = f"{r['max_dF_rel_to_keep']:.1e}" if "max_dF_rel_to_keep" in r else "-"
        lines.append(f"| {r['run']} | {r['n_atoms']} | {r['n_edges']} | {r['activations']} | "
                     f"{r['median_s'] * 1e3:.1f} ms | {peak} | {model} | {dF} |")
    (out / "memory.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
