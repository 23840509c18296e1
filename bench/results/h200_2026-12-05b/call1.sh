#!/bin/bash
# Device call 1 (a fresh machine, no LAMMPS: .device holds Kokkos for CUDA only): the engine,
# units and bench built; the GPU unit tests (the workspace reservation, the stream plan, the
# device budget among them); then bench/v2_memory.sh (bcc Cu 4394 keep / recompute / stream /
# auto under 1.5 GB, and a million atoms of bcc Cu under auto on the card's own memory; its
# LAMMPS run fails at once, no lmp here); then the million atoms again with expandable segments
# if time is left. Carried: .device (deps-gpu.tar.xz). Predictions: predictions.md.
#   OUT=$OUT bash bench/results/h200_2026-12-05b/call1.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv > "$R/gpu.txt" 2>&1; cat "$R/gpu.txt"
export NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests"
OUT=$R timeout 270 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-step.log" | head -5
OUT=$R timeout 150 scripts/gpu_session.sh test > "$R/test-step.log" 2>&1
echo "test rc $? at $((SECONDS - T0)) s"; tail -8 "$R/test-step.log"
grep -E "FAILED|Failure" "$R/unit-gpu.log" | head -20
source "$(scripts/bootstrap.sh --gpu --no-lammps --print-env)"
left=$((560 - (SECONDS - T0)))
PYTHONUNBUFFERED=1 timeout -k 5 $left bash bench/v2_memory.sh /tmp/mem > "$R/v2_memory.out" 2>&1
echo "v2_memory rc $? at $((SECONDS - T0)) s"
cat "$R/v2_memory.out" | cut -c1-400
echo "== fp32: keep and stream in chunks of 65 536 on bcc Cu 4394 at $((SECONDS - T0)) s"
for plan in keep stream; do
  timeout 60 build-gpu/bench/edgeframe_bench --case /tmp/mem/cases/bcc4394.case --potential /tmp/mem/umas.safetensors \
    --precision fp32 --reps 3 --warmup 1 --activations $plan $([[ $plan == stream ]] && echo --edge-chunk 65536) \
    --forces-out /tmp/mem/fp32-$plan.forces > /tmp/mem/fp32-$plan.log 2>&1
  echo "fp32 $plan rc $?: $(grep -o '"activations": "[^"]*"\|"median_s": [^,]*\|"peak_bytes": [^,]*' /tmp/mem/fp32-$plan.log | tr '\n' ' ')"
done
python3 -c "
import numpy as np
k = np.fromfile('/tmp/mem/fp32-keep.forces', '<f8').reshape(-1, 3)
s = np.fromfile('/tmp/mem/fp32-stream.forces', '<f8').reshape(-1, 3)
print('fp32 stream vs keep: max|dF| %.3e eV/A, max|F| %.3e, ratio %.3e' % (abs(s - k).max(), abs(k).max(), abs(s - k).max() / abs(k).max()))"
left=$((570 - (SECONDS - T0)))
if ((left > 100)); then
  echo "== large-auto with expandable segments at $((SECONDS - T0)) s"
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout -k 5 $((left - 10)) build-gpu/bench/edgeframe_bench \
    --case /tmp/mem/cases/bcc1024000.case --potential /tmp/mem/umas.safetensors --precision tf32 --reps 1 --warmup 1 \
    --activations auto > /tmp/mem/large-auto-expandable.log 2>&1
  echo "rc $?"; cut -c1-600 /tmp/mem/large-auto-expandable.log
fi
cp /tmp/mem/*.log /tmp/mem/memory.md /tmp/mem/memory.json "$R/" 2>/dev/null
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
