#!/bin/bash
# Model v2 potentials, GPU training call 1 (one H200): the shipped v2 files continued with the
# near-equilibrium families oversampled and the virial weighted (gpu_production.sh C-eq-v2,
# Cu-eq-v2), one process each at the same time. Run from the repo root:
#   OUT=$OUT bash bench/results/training/gpu-2026-12-03/call1.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=440 HARD=490 RUNS="C-eq-v2 Cu-eq-v2" WORK=/tmp/train-v2-eq1 \
  bash tools/train/gpu_production.sh
