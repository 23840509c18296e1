#!/bin/bash
# Device call 3 (a fresh machine, no LAMMPS): the bench built (engine only). Calls 4-8 then copy
# nvidia-cutlass-dsl's parts into /tmp/cutlass-parts, one per call, and call 9 runs the gate.
# Carried: .device/deps-gpu.tar.xz, the Kokkos and trimmed LAMMPS tarballs.
#   OUT=$OUT bash bench/results/h200_2026-12-05b/call3.sh
set -u
T0=$SECONDS
mkdir -p "$OUT/r"
export NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench"
OUT=$OUT/r timeout 300 scripts/gpu_session.sh build > "$OUT/r/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$OUT/r/build-step.log" | head -5
