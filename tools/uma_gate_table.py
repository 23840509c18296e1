#!/usr/bin/env python3
"""The table of one bench/uma_gate.sh run: per structure every column's step time, peak memory,
speed against fairchem's umas_fast_gpu + TF32 (that path's time / the column's: above 1 is
faster) and max |dF| against fairchem's fp64 forces of the same structure, from OUTDIR's
fairchem.jsonl (bench/fairchem_gpu_speed.py) and edgeframe.log (bench/v2_gpu_measure.sh with
V2_FROM_REF=1). Writes OUTDIR/gate.md and OUTDIR/gate.json.

    python3 tools/uma_gate_table.py OUTDIR
"""

import argparse
import json
import pathlib
import re

PEER = "fast_gpu_tf32"  # the peer of issue 26: fairchem's fastest path that runs on the H200
LAMMPS_STEPS = 50       # bench/v2_gpu_measure.sh's timed LAMMPS run


def fairchem_columns(jsonl):
    """{(structure, column): row} of the timing records, and {structure: (atoms, edges)}."""
    cols, sizes = {}, {}
    for line in jsonl.read_text().splitlines():
        r = json.loads(line)
        if r.get("record") != "timing" or "structure" not in r:
            continue
        name = r["structure"]
        if "atoms" in r and "edges" in r:
            sizes[name] = (r["atoms"], r["edges"])
        row = {"status": r.get("status", "?")}
        if r.get("status") == "ok":
            row.update(ms=r["median_ms"], peak_gb=r["peak_gib"] * 2**30 / 1e9 if "peak_gib" in r else None,
                       dF=r.get("forces_max_diff_fp64_ref"))
        else:
            row["status"] = (r.get("status", "") + " " + r.get("error", "")).strip()
        cols[(name, "fairchem " + r["path"])] = row
    return cols, sizes


ENGINE = re.compile(r'^(\w+) (\w+) rc (\d+): "n_edges": (\d+) "median_s": ([0-9.e+-]+) "peak_bytes": (\d+)')
LAMMPS = re.compile(r"^(\w+) (\w+) rc (\d+): Loop time of ([0-9.e+-]+) on .* for (\d+) steps")
DF = re.compile(r"^(engine|LAMMPS) (\w+) (\w+): max \|dF\| against fairchem fp64 ([0-9.e+-]+) eV/A")


def edgeframe_columns(log):
    """{(structure, column): row} of bench/v2_gpu_measure.sh's lines."""
    cols = {}
    for line in log.read_text().splitlines():
        if m := ENGINE.match(line):
            cols[(m.group(1), f"edgeframe engine {m.group(2)}")] = {
                "status": "ok" if m.group(3) == "0" else f"rc {m.group(3)}", "ms": 1e3 * float(m.group(5)),
                "peak_gb": int(m.group(6)) / 1e9, "edges": int(m.group(4))}
        elif m := LAMMPS.match(line):
            cols[(m.group(1), f"edgeframe LAMMPS {m.group(2)}")] = {
                "status": "ok" if m.group(3) == "0" else f"rc {m.group(3)}",
                "ms": 1e3 * float(m.group(4)) / int(m.group(5)), "peak_gb": None}
        elif m := DF.match(line):
            kind = "engine" if m.group(1) == "engine" else "LAMMPS"
            cols.setdefault((m.group(2), f"edgeframe {kind} {m.group(3)}"), {"status": "?"})["dF"] = float(m.group(4))
    return cols


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    args = ap.parse_args(argv)
    out = pathlib.Path(args.outdir)
    fc, sizes = fairchem_columns(out / "fairchem.jsonl")
    ef = edgeframe_columns(out / "edgeframe.log") if (out / "edgeframe.log").exists() else {}
    cols = {**fc, **ef}
    structures = list(dict.fromkeys(s for s, _ in cols))
    lines = ["# UMA gate", "", f"`bench/uma_gate.sh {out}`: every column in this one run, on one device. Speed: "
             f"fairchem {PEER}'s step time / the column's (above 1: faster than that path). max |dF|: against "
             "fairchem's fp64 forces of the structure (general path, experts unmerged).", ""]
    rows_json = []
    for s in structures:
        atoms, edges = sizes.get(s, (None, None))
        lines += [f"## {s}" + (f" ({atoms} atoms, {edges} edges)" if atoms else ""), "",
                  "| column | ms/step | speed vs fairchem " + PEER + " | peak GB | max abs dF eV/A |", "|---|---|---|---|---|"]
        peer = cols.get((s, "fairchem " + PEER), {}).get("ms")
        for (s2, name), row in cols.items():
            if s2 != s:
                continue
            ms = row.get("ms")
            speed = f"{peer / ms:.2f}x" if ms and peer else "-"
            peak = f"{row['peak_gb']:.2f}" if row.get("peak_gb") is not None else "-"
            df = f"{row['dF']:.1e}" if row.get("dF") is not None else "-"
            if row.get("status") not in ("ok", "?") or ms is None:
                lines.append(f"| {name} | {row.get('status', '-')} | - | - | {df} |")
            else:
                lines.append(f"| {name} | {ms:.2f} | {speed} | {peak} | {df} |")
            rows_json.append({"structure": s, "column": name, **row})
        lines.append("")
    (out / "gate.md").write_text("\n".join(lines))
    (out / "gate.json").write_text(json.dumps({"peer": PEER, "rows": rows_json}, indent=1))


if __name__ == "__main__":
    main()
