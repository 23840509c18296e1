#!/bin/bash
# Production training of the shipped potentials in ONE call on the GPU machine.
#
#   OUT=/some/dir BUDGET=230 bash tools/train/gpu_production.sh        (from the repo root)
#
# Runs one after the other (the H200 machine's `nproc` said 1 in the 2026-11-29 call: four
# concurrent runs shared one core and each managed ~0.4 s per step). Needs build-train/cache
# (neighbour lists, written by any `train.py --cache build-train/cache` run; carry it).
# The device tool returns at most 8 files of <= 16 MiB: $OUT gets the potentials, one
# runs.tar.gz (logs, metrics, history, plots, provenance; no checkpoints), summary.txt, env.txt.
set -u
OUT=${OUT:?set OUT}
BUDGET=${BUDGET:-230}            # seconds of training per run (train.py --time-budget)
HARD=${HARD:-$((BUDGET + 60))}   # kill a run after this many seconds, whatever it is doing
PY=${PY:-$(command -v python3 || command -v python)}
DEVICE=${DEVICE:-cuda}
RUNS=${RUNS:-"C-a Cu-a"}
EXTRA=${EXTRA:-}
WORK=${WORK:-$(mktemp -d)}
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
mkdir -p "$OUT" "$WORK"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -2
  echo "nproc $(nproc)"
  "$PY" -c 'import torch, sys; print(sys.version.split()[0], torch.__version__, torch.cuda.is_available())'
  "$PY" -c 'import safetensors, matplotlib, tqdm; print("safetensors", safetensors.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
common=(--device "$DEVICE" --dtype float64 --cache build-train/cache --time-budget "$BUDGET"
        --threads 1 --print-every 5 --batch 16 --eval-batch 32 --w-energy 200)
for r in $RUNS; do
  case $r in
    C-a)  args=(--element C --name C-diamond --lr 3e-3) ;;
    C-b)  args=(--element C --name C-diamond --channels 64 --hidden-channels 64 --ffn-channels 128 --lr 1.5e-3) ;;
    Cu-a) args=(--element Cu --name Cu --lr 3e-3) ;;
    Cu-b) args=(--element Cu --name Cu --channels 64 --hidden-channels 64 --ffn-channels 128 --lr 1.5e-3) ;;
    *) echo "unknown run $r"; continue ;;
  esac
  # shellcheck disable=SC2086
  timeout -s INT "$HARD" "$PY" tools/train/train.py "${args[@]}" --out "$WORK/$r" "${common[@]}" $EXTRA \
      > "$WORK/$r.log" 2>&1
  cp "$WORK/$r"/*.safetensors "$OUT/" 2>/dev/null
done
for r in $RUNS; do
  echo "== $r"
  grep -E "parameters|plan|TEST|early|budget|epochs,|Error|error|  [a-z]+ +E " "$WORK/$r.log" | tail -n 14
done > "$OUT/summary.txt"
cat "$OUT/summary.txt"
tar -C "$WORK" --exclude='*.pt' --exclude='*.safetensors' -czf "$OUT/runs.tar.gz" .
ls -la "$OUT"
