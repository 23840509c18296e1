#!/bin/bash
# Device call 4 (a cold machine, no LAMMPS): this tree's bench and GPU units built, the units
# run (Gemm.Bf16OperandsIntoAColumnRangeOfAWiderOutput: the cuBLASLt path for bf16 operands),
# then the random UMA-S-shape v2 file in bench case mode, bf16 and tf32 per case in one call
# (the tf32 path is the base's: it anchors the bf16 figures of call 3). Predictions: predictions.md.
#   OUT=$OUT bash bench/results/h200_2026-12-05c/call4.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
nvidia-smi --query-gpu=name,memory.total --format=csv
OUT=$R NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests" timeout 330 \
  scripts/gpu_session.sh build test > "$R/build-test.log" 2>&1
echo "build and units rc $? at $((SECONDS - T0)) s"
grep -E "built in|error|PASSED|FAILED|SKIPPED" "$R/build-test.log" | head -12
grep -E "So2Convolution|Bf16|bf16" "$R/unit-gpu.log" | grep -E "measured|OK|FAILED" | head -20
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
pot=/tmp/umas.safetensors cases=/tmp/cases
python3 bench/v2_random_potential.py $pot > "$R/potential.log" 2>&1
python3 bench/v2_cases.py --potential $pot --out $cases --cases diamond512,bcc4394,diamond4096 > "$R/cases.log" 2>&1
for c in diamond512 bcc4394 diamond4096; do
  reps=20
  [[ $c == diamond4096 ]] && reps=10
  for p in bf16 tf32; do
    ((SECONDS - T0 < 560)) || { echo "skipped $c $p: time"; continue; }
    timeout 90 build-gpu/bench/edgeframe_bench --case $cases/$c.case --potential $pot --precision $p --reps $reps \
      --warmup 3 --torch-profile > "$R/umas-$c-$p.log" 2>&1
    echo "$c $p rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"peak_bytes": [0-9]*' "$R/umas-$c-$p.log" | tr '\n' ' ')"
  done
done
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
