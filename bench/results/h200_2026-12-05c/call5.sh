#!/bin/bash
# Device call 5 (a cold machine, little device time left): this tree's bench and units built; the
# units of the bf16 storage (So2Convolution, Bf16, Gemm.Bf16*) on the GPU; bcc Cu 4394 in bf16 and
# tf32 (the pack's grad_g now written in bfloat16 too). Predictions: predictions.md.
#   OUT=$OUT bash bench/results/h200_2026-12-05c/call5.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
nvidia-smi --query-gpu=name,memory.total --format=csv
OUT=$R NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests" timeout 260 \
  scripts/gpu_session.sh build > "$R/build.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"
grep -E "built in|error" "$R/build.log" | head -5
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
timeout 60 build-gpu/tests/edgeframe_unit_tests --gtest_filter='So2Convolution*:Bf16*:Gemm.Bf16*' > "$R/units.log" 2>&1
echo "units rc $?"; grep -E "measured|OK|FAILED|PASSED" "$R/units.log" | head -20
pot=/tmp/umas.safetensors cases=/tmp/cases
python3 bench/v2_random_potential.py $pot > "$R/potential.log" 2>&1
python3 bench/v2_cases.py --potential $pot --out $cases --cases bcc4394 > "$R/cases.log" 2>&1
for p in bf16 tf32; do
  ((SECONDS - T0 < 300)) || { echo "skipped $p: time"; continue; }
  timeout 60 build-gpu/bench/edgeframe_bench --case $cases/bcc4394.case --potential $pot --precision $p --reps 20 \
    --warmup 3 --torch-profile > "$R/umas-bcc4394-$p.log" 2>&1
  echo "bcc4394 $p rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"peak_bytes": [0-9]*' "$R/umas-bcc4394-$p.log" | tr '\n' ' ')"
done
echo "total $((SECONDS - T0)) s"
