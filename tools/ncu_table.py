#!/usr/bin/env python3
"""Summarise an ncu text log of edgeframe's Kokkos kernels (scripts/gpu_session.sh ncu step):
one row per kernel (functor / tag), mean over its launches: duration, DRAM and memory
throughput (% of peak), SM throughput, cache hit rates, issue rate and warp eligibility
(scheduler statistics), achieved occupancy, registers, memory bandwidth.

  python3 tools/ncu_table.py ncu.log            (or ncu.log.xz)
"""
import lzma
import re
import sys


def metric(block, name):
    """(value, unit) of the first `name` row of a section table, or (nan, '')."""
    m = re.search(r"\n\s+" + re.escape(name) + r"\s+(\S+)?\s+([\d,.]+)\n", block)
    if not m:
        return float("nan"), ""
    return float(m.group(2).replace(",", "")), m.group(1) or ""


def kernel_rows(text):
    rows = {}
    for block in re.split(r"\n  void cuda_parallel_launch_local_memory<", text)[1:]:
        name = block.split("(T1)")[0]
        m = re.match(r"ParallelFor<(\w+)<Cuda(?:, \d+)?(?:, (?:float|double))?>, (?:TeamPolicy|RangePolicy)<Cuda(?:, (\w+))?", name)
        key = f"{m.group(1)}/{m.group(2) or '-'}" if m else name[:50]
        dur, unit = metric(block, "Duration")
        dur *= {"ms": 1000.0, "us": 1.0, "ns": 1e-3, "s": 1e6}.get(unit, float("nan"))
        bw, bw_unit = re.search(r"Memory Throughput\s+(\S+)\s+([\d,.]+)\n", block.split("Memory Workload Analysis")[-1]).groups()[::-1] \
            if "Memory Workload Analysis" in block else ("nan", "")
        bw = float(str(bw).replace(",", "")) * {"Gbyte/s": 1.0, "Tbyte/s": 1000.0, "Mbyte/s": 1e-3}.get(bw_unit, float("nan"))
        grid = re.search(r"\(T1\) \(([\d, ]+)\)x\(([\d, ]+)\)", block)
        vals = {"us": dur, "DRAM%": metric(block, "DRAM Throughput")[0], "mem%": metric(block, "Mem Busy")[0],
                "SM%": metric(block, "Compute (SM) Throughput")[0], "L1hit%": metric(block, "L1/TEX Hit Rate")[0],
                "L2hit%": metric(block, "L2 Hit Rate")[0], "issued": metric(block, "Issued Warp Per Scheduler")[0],
                "eligible": metric(block, "Eligible Warps Per Scheduler")[0],
                "occ%": metric(block, "Achieved Occupancy")[0], "regs": metric(block, "Registers Per Thread")[0],
                "GB/s": bw}
        rows.setdefault(key, []).append((vals, "x".join(g.replace(", 1, 1", "") for g in grid.groups()) if grid else ""))
    return rows


def main(path):
    opener = lzma.open if path.endswith(".xz") else open
    with opener(path, "rt") as f:
        rows = kernel_rows(f.read())
    cols = ["us", "DRAM%", "mem%", "SM%", "L1hit%", "L2hit%", "issued", "eligible", "occ%", "regs", "GB/s"]
    print("| kernel (functor/tag) | launches | " + " | ".join(cols) + " | grid x block |")
    print("|---|---|" + "---|" * len(cols) + "---|")
    for key, launches in sorted(rows.items(), key=lambda kv: -sum(v["us"] for v, _ in kv[1])):
        mean = {c: sum(v[c] for v, _ in launches) / len(launches) for c in cols}
        cells = " | ".join(f"{mean[c]:.2f}" if c in ("issued", "eligible") else f"{mean[c]:.0f}" for c in cols)
        print(f"| {key} | {len(launches)} | {cells} | {launches[0][1]} |")


if __name__ == "__main__":
    main(sys.argv[1])
