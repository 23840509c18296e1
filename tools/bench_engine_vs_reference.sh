#!/usr/bin/env bash
# Engine vs PyTorch reference on the CPU, side by side in one run (issue #4): full-size L2
# model (C 128, T 4), 512-atom rattled diamond, fp32, energy + forces, 2 threads each.
# usage: tools/bench_engine_vs_reference.sh [build-dir] [out-dir]
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$repo/build}"; out="${2:-$repo/build/bench-cpu}"
# shellcheck disable=SC1090
source "$("$repo/scripts/bootstrap.sh" --print-env)"
mkdir -p "$out"
export OMP_NUM_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads
echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== engine (bench/edgeframe_bench --shape L2 --cells 4 --reps 3 --precision fp32)"
"$build/bench/edgeframe_bench" --shape L2 --cells 4 --reps 3 --precision fp32 | tee "$out/engine.txt"
echo "== reference eager (tools/bench_reference.py, diamond 512 L2, 3 repeats, 2 threads)"
"$EDGEFRAME_PYTHON" "$repo/tools/bench_reference.py" --device cpu --dtype float32 --systems diamond --sizes 512 \
  --shapes L2 --modes eager --repeats 3 --warmup 1 --threads 2 --out "$out/reference.json" | tee "$out/reference.txt"
echo "== load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
