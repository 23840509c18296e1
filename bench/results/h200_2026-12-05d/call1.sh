#!/bin/bash
# Device calls 1 and 2: the split mode's tensor-core GEMM (kokkos/tensor_core_gemm.hpp) against
# the base 926f143, on one warm machine. Predictions: predictions.md.
# Carried: .device/deps-gpu.tar.xz, the Kokkos and trimmed LAMMPS tarballs (+ .sha256),
# .device/src-head.tar.gz (git archive 926f143, the list in bench/kernel_ab.sh).
#   call 1: OUT=$OUT STAGE=build bash bench/results/h200_2026-12-05d/call1.sh
#           both builds and this tree's GPU units (bench/kernel_ab.sh)
#   call 2: OUT=$OUT STAGE=bench bash bench/results/h200_2026-12-05d/call1.sh
#           the GEMM against cuBLAS on model v2's shapes (bench/tensor_core_gemm_bench.cu); both
#           builds timed in tf32x3 and tf32 (bench/kernel_ab.sh); this tree's fp64 forces as the
#           reference of each build's tf32x3 and tf32 forces
set -u
nvidia-smi --query-gpu=name,memory.total --format=csv
mkdir -p "$OUT/r"
if [[ ${STAGE:-build} == build ]]; then
  CALL_BUDGET=580 bash bench/kernel_ab.sh
  exit 0
fi
T=$SECONDS
nvcc -O3 -std=c++17 -arch=sm_90 -Ikokkos bench/tensor_core_gemm_bench.cu -lcublas -o /tmp/tcgemm \
  && timeout 100 /tmp/tcgemm --reps 20 > "$OUT/r/gemm-bench.txt" 2>&1
echo "gemm bench rc $? in $((SECONDS - T)) s"; cat "$OUT/r/gemm-bench.txt"
CALL_BUDGET=$((500 - (SECONDS - T))) AB_PRECISIONS="tf32x3 tf32" AB_EXTRA=0 bash bench/kernel_ab.sh
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
for c in diamond512 bcc4394; do
  timeout 50 build-gpu/bench/edgeframe_bench --case /tmp/cases/$c.case --potential /tmp/umas.safetensors \
    --precision fp64 --reps 2 --warmup 1 --forces-out /tmp/f-fp64-$c > "$OUT/r/new/umas-$c-fp64.log" 2>&1
  echo "fp64 $c rc $?"
done
python3 - << 'PY' | tee "$OUT/r/forces-vs-fp64.txt"
import os
import numpy as np
for c in ("diamond512", "bcc4394"):
    ref = f"/tmp/f-fp64-{c}"
    if not os.path.exists(ref):
        print(c, "no fp64 forces"); continue
    r = np.fromfile(ref, dtype="<f8")
    for b in ("old", "new"):
        for p in ("tf32x3", "tf32"):
            f = f"/tmp/f-{b}-umas-{c}-{p}"
            if os.path.exists(f):
                x = np.fromfile(f, dtype="<f8")
                print(f"{c} {b} {p}: max|dF| / max|F| against fp64 {np.abs(x - r).max() / np.abs(r).max():.2e}")
PY
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
