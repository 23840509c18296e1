#!/bin/bash
# Model v2 potentials, GPU training call 1 of this directory (one H200): copper continued from
# the shipped Cu-v2 with the stacking-fault line in its data (gpu_production.sh Cu-sf-v2), carbon
# continued from the call-3 candidate (C-eq3-v2), one process each at the same time. From the
# repo root, carrying build-train/cache (the new copper data's neighbour lists):
#   OUT=$OUT bash bench/results/training/gpu-2026-12-03b/call1.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=450 HARD=505 RUNS="C-eq3-v2 Cu-sf-v2" WORK=/tmp/train-v2-sf1 \
  INIT_C=bench/results/training/gpu-2026-12-03/call3-C.safetensors bash tools/train/gpu_production.sh
