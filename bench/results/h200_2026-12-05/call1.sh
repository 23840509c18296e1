#!/bin/bash
# H200 call 1 (a fresh machine): edgeframe's plugin and bench built, then issue 26's memory
# targets, bench/v2_memory.sh (bcc Cu 4394 keep / recompute / stream / auto under 1.5 GB, and
# a million atoms of bcc Cu in the engine and through LAMMPS). Carried: .device/deps-gpu.tar.xz.
# Predictions: predictions.md. Big files (cases, forces) stay in /tmp/mem; logs come back.
#   OUT=$OUT bash bench/results/h200_2026-12-05/call1.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 260 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-step.log" | head -5
source "$(scripts/bootstrap.sh --gpu --print-env)"
export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}" PATH="$LAMMPS_ROOT/bin:$PATH"
mkdir -p "$LAMMPS_ROOT/include"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv > "$R/gpu.txt" 2>&1
left=$((575 - (SECONDS - T0)))
PYTHONUNBUFFERED=1 timeout -k 5 $left bash bench/v2_memory.sh /tmp/mem > "$R/v2_memory.out" 2>&1
echo "v2_memory rc $? at $((SECONDS - T0)) s"
cat "$R/v2_memory.out"
cp /tmp/mem/*.log /tmp/mem/memory.md /tmp/mem/memory.json /tmp/mem/in.large "$R/" 2>/dev/null
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
