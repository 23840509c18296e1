#!/bin/bash
# Model v2 potentials, GPU training call 3 (one H200): call 2's files continued at half the
# learning rate (gpu_production.sh C-eq2-v2, Cu-eq2-v2). Run from the repo root:
#   OUT=$OUT bash bench/results/training/gpu-2026-12-03/call3.sh
set -u
OUT=${OUT:?set OUT}
D=bench/results/training/gpu-2026-12-03
OUT=$OUT MODEL=v2 BUDGET=320 HARD=370 RUNS="C-eq2-v2 Cu-eq2-v2" WORK=/tmp/train-v2-eq3 \
  INIT_C=$D/call2-C.safetensors INIT_CU=$D/call2-Cu.safetensors bash tools/train/gpu_production.sh
