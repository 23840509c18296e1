#!/bin/bash
# Device call 2 (warm from call 1: build-gpu/ with the bench, the dependency prefix): the UMA
# gate without LAMMPS (no lmp on this machine) with fairchem's umas_fast_gpu + TF32 and Nitro's
# portable path (the capability now reported as 8.0 through the predict unit's load too),
# edgeframe's engine tf32 on the three structures. Carried: .device/fairchem-wheels.
#   OUT=$OUT bash bench/results/h200_2026-12-05b/call2.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
bash .device/fairchem-wheels/INSTALL.sh /tmp/fcpkgs > "$R/install.log" 2>&1; echo "fairchem install rc $?"
tail -2 "$R/install.log"
export PYTHONPATH=/tmp/fcpkgs
source "$(scripts/bootstrap.sh --gpu --no-lammps --print-env)"
left=$((565 - (SECONDS - T0)))
UMA_GATE_PATHS=fast_gpu_tf32,nitro_portable UMA_GATE_PRECISIONS=tf32 UMA_GATE_LAMMPS_TAGS= \
  TIME_LEFT=$((left * 40 / 100)) FAIRCHEM_BUDGET=$((left * 50 / 100)) timeout $((left - 5)) bash bench/uma_gate.sh /tmp/uma-gate \
  > "$R/uma-gate.out" 2>&1
echo "uma_gate rc $? at $((SECONDS - T0)) s"
cp /tmp/uma-gate/gate.md /tmp/uma-gate/gate.json /tmp/uma-gate/fairchem.jsonl "$R/" 2>/dev/null
tar -C /tmp/uma-gate --exclude='*.case' --exclude='*.data' --exclude='*.safetensors' --exclude='*.pt' \
  --exclude='*.dump' --exclude='*.f8' --exclude='*.npz' -cJf "$R/uma-gate-logs.tar.xz" fairchem.log edgeframe.log edgeframe 2>/dev/null
cat "$R/uma-gate.out"
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
