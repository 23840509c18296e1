#!/bin/bash
# CPU training of the shipped potentials (the fallback of potentials/README.md): one process,
# one thread, C then Cu, BUDGET seconds of training each (train.py --time-budget).
#   source /opt/edgeframe-deps/env-cpu.sh; BUDGET=900 bash tools/train/cpu_production.sh
set -eu
BUDGET=${BUDGET:-900}
PY=${EDGEFRAME_PYTHON:-python3}
RUNS=${RUNS:-build-train/runs}
mkdir -p "$RUNS"
small=(--channels 16 --hidden-channels 16 --ffn-channels 32 --radial-hidden 32 --readout-hidden 32)
common=(--cache build-train/cache --device cpu --dtype float32 --store-dtype float32 --threads 1
        --time-budget "$BUDGET" --batch 4 --lr 3e-3 --lr-min 3e-5 --warmup-steps 50
        --w-energy 200 --eval-batch 16 --final-splits val test --print-every 1)
"$PY" tools/train/train.py --element C --name C-diamond --out "$RUNS/C-cpu" "${small[@]}" "${common[@]}" \
    > "$RUNS/C-cpu.log" 2>&1
"$PY" tools/train/train.py --element Cu --name Cu --out "$RUNS/Cu-cpu" "${small[@]}" "${common[@]}" \
    > "$RUNS/Cu-cpu.log" 2>&1
