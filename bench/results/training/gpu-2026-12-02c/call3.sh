#!/bin/bash
# Model v2 potentials, GPU training call 3 (one H200): call 2's carbon and copper runs continued (their best.pt, carried as build-train/init/{C,Cu}-v2-best.pt), one
# process each at the same time, on the data set with the near-equilibrium static families
# (doc/data.md). Shapes: tools/train/v2.py PRESETS_V2. Run from the repo root:
#   OUT=$OUT bash bench/results/training/gpu-2026-12-02c/call3.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=420 HARD=470 RUNS="C-cont-v2 Cu-cont-v2" WORK=/tmp/train-v2-call3 \
  bash tools/train/gpu_production.sh
