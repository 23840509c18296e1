#!/bin/bash
# Model v2 potentials, GPU training call 1 (one H200): carbon and copper from scratch, one
# process each at the same time, on the data set with the near-equilibrium static families
# (doc/data.md). Shapes: tools/train/v2.py PRESETS_V2. Run from the repo root:
#   OUT=$OUT bash bench/results/training/gpu-2026-12-02c/call1.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=450 HARD=510 RUNS="C-e20 Cu-e100" WORK=/tmp/train-v2-call1 \
  bash tools/train/gpu_production.sh
