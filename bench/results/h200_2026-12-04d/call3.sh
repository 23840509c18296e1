#!/bin/bash
# The UMA gate with its LAMMPS columns (issue 26 item 1, issue 24 item 5): bench/uma_gate.sh as in
# bench/results/h200_2026-12-04c/call5.sh's gate stage, now with the device-built LAMMPS. The
# build step first (a no-op on the warm machine of call 2). Carried: .device/deps-gpu.tar.xz and
# .device/fairchem-wheels. Predictions: predictions.md.
set -u
T0=$SECONDS
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
mkdir -p "$OUT/r"
OUT=$OUT/r timeout 240 scripts/gpu_session.sh build > "$OUT/r/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"
OUT=$OUT STAGE=gate bash bench/results/h200_2026-12-04c/call5.sh
