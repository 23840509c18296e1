#!/usr/bin/env bash
# The split mode (precision tf32x3) in one device call, on the engine as it is in this tree:
#   1. the engine's GPU build and units (scripts/gpu_session.sh build test, no LAMMPS);
#   2. the split GEMM's microbenchmark (bench/wgmma/wgmma_tf32x3_bench.cu: wgmma, mma.sync,
#      cuBLAS TF32 / SGEMM on model v2's SO(2) shapes, time and error against fp64);
#   3. the engine step on a random UMA-S-shape file (bench/v2_random_potential.py) in tf32x3,
#      tf32 and fp64 per case (bench case mode, medians of 20; fp64 of 2), and each mode's
#      max |dF| / max |F| against fp64.
# SPLIT_CASES (default diamond512,bcc4394) picks bench/v2_cases.py's cases; CALL_LIMIT (seconds,
# default 520) is when the remaining steps are skipped. Results in /tmp/split-mode-call/r, packed
# into OUT/results.tar.xz. Carry the engine build's inputs (.device/deps-gpu.tar.xz,
# kokkos_5.0.2.orig.tar.gz, lammps-20260704-trimmed.tar.xz and its .sha256). About 330 s cold.
#   run from the repository root on the device: OUT=$OUT bash bench/split_mode_call.sh
set -u
T0=$SECONDS
: "${OUT:?set OUT}"
R=/tmp/split-mode-call/r
rm -rf /tmp/split-mode-call; mkdir -p "$R"
pack() { tar -C /tmp/split-mode-call -cJf "$OUT/results.tar.xz" r; }
limit=${CALL_LIMIT:-520}
nvidia-smi --query-gpu=name,memory.total --format=csv
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ikokkos -Ibench bench/wgmma/wgmma_tf32x3_bench.cu -lcublas \
  -o /tmp/wg > "$R/gemm-build.log" 2>&1 &
OUT=$R NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests" timeout 330 \
  scripts/gpu_session.sh build test > "$R/build.log" 2>&1
echo "build and units rc $? at $((SECONDS - T0)) s"
grep -E "built in|error|PASSED|FAILED|SKIPPED" "$R/build.log" | head -20
grep -E "FAILED|tensor-core|tf32x3" "$R/unit-gpu.log" | head -20
pack
wait
timeout 60 /tmp/wg --reps 20 > "$R/gemm-bench.txt" 2>&1; echo "gemm bench rc $?"; cat "$R/gemm-bench.txt"
pack
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
pot=/tmp/umas.safetensors cases=/tmp/cases
python3 bench/v2_random_potential.py $pot > "$R/potential.log" 2>&1
python3 bench/v2_cases.py --potential $pot --out $cases --cases "${SPLIT_CASES:-diamond512,bcc4394}" \
  > "$R/cases.log" 2>&1
one() {  # label precision case reps
  ((SECONDS - T0 < limit)) || { echo "skipped $1: time"; return; }
  timeout 60 build-gpu/bench/edgeframe_bench --case $cases/$3.case --potential $pot --precision $2 \
    --reps $4 --warmup 3 --forces-out /tmp/f-$1 > "$R/$1.log" 2>&1
  echo "$1 rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"peak_bytes": [0-9]*' "$R/$1.log" | tr '\n' ' ')"
}
IFS=, read -ra case_list <<< "${SPLIT_CASES:-diamond512,bcc4394}"
for c in "${case_list[@]}"; do
  one $c-tf32x3 tf32x3 $c 20
  one $c-tf32 tf32 $c 20
  one $c-fp64 fp64 $c 2
done
python3 - "${case_list[@]}" << 'PY' | tee "$R/forces-vs-fp64.txt"
import os
import sys
import numpy as np
for c in sys.argv[1:]:
    ref = f"/tmp/f-{c}-fp64"
    if not os.path.exists(ref):
        print(c, "no fp64 forces"); continue
    r = np.fromfile(ref, dtype="<f8")
    for v in ("tf32x3", "tf32"):
        f = f"/tmp/f-{c}-{v}"
        if os.path.exists(f):
            x = np.fromfile(f, dtype="<f8")
            print(f"{c} {v}: max|dF| / max|F| against fp64 {np.abs(x - r).max() / np.abs(r).max():.2e}")
PY
pack
echo "total $((SECONDS - T0)) s"
