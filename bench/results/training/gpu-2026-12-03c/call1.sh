#!/bin/bash
# Model v2 potentials, GPU training call 1 of this directory (one H200), two processes at once:
# copper continued from the shipped Cu-v2 with the energy term of the lattice, relaxed and fault
# families x20 (gpu_production.sh Cu-sfw-v2), carbon continued from the shipped C-diamond-v2
# with energy weight 100 (C-e100-v2). From the repo root, carrying build-train/cache:
#   OUT=$OUT bash bench/results/training/gpu-2026-12-03c/call1.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=450 HARD=505 RUNS="C-e100-v2 Cu-sfw-v2" WORK=/tmp/train-v2-ew1 \
  bash tools/train/gpu_production.sh
