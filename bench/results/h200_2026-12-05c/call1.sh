#!/bin/bash
# Device call 1 (no LAMMPS: .device holds Kokkos for CUDA only): the bench built, then where a
# 512-atom L2 tf32 step goes (issue 23's 9 ms): the profile step of scripts/gpu_session.sh (fenced
# per-kernel split and LibTorch's profile: L2 / L3 fp32, L2 tf32) and one L2 tf32 Chrome trace
# (every launch of a step, for the count of the small ones). Predictions: predictions.md.
#   OUT=$OUT bash bench/results/h200_2026-12-05c/call1.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
nvidia-smi --query-gpu=name,memory.total --format=csv > "$R/gpu.txt" 2>&1; cat "$R/gpu.txt"
export NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench"
OUT=$R timeout 300 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-step.log" | head -5
OUT=$R timeout 150 scripts/gpu_session.sh profile > /dev/null 2>&1
echo "profile rc $? at $((SECONDS - T0)) s"
timeout 60 build-gpu/bench/edgeframe_bench --shape L2 --cells 4 --reps 5 --precision tf32 --torch-profile \
  --trace /tmp/trace-l2-512-tf32.json > "$R/trace-run.log" 2>&1
echo "trace rc $? at $((SECONDS - T0)) s"
xz -T0 -c /tmp/trace-l2-512-tf32.json > "$R/trace-l2-512-tf32.json.xz"
ls -la "$R"
echo "total $((SECONDS - T0)) s"
