#!/bin/bash
# Copper, call 2 of this directory (one GPU, one process): Cu-stackd-v2 of call 1 continued for
# 200 s (the session's device time left) as gpu_production.sh variant Cu-stackd2-v2.
# Predictions: predictions.md ("Call 2"), written before the call. From the repo root, carrying
# build-train/cache:
#   OUT=$OUT bash bench/results/training/gpu-2026-12-06b/call2.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=${BUDGET:-190} HARD=${HARD:-230} RUNS="Cu-stackd2-v2" WORK=/tmp/train-v2-1206d \
  INIT_CU=bench/results/training/gpu-2026-12-06b/cpu2-Cu-stackd2.safetensors bash tools/train/gpu_production.sh
