#!/bin/bash
# Model v2 copper, GPU training call 2 of this directory (one H100 or H200, one process): the
# shipped Cu-v2 with the fault line's and the relaxed defects' energies fitted as differences
# over the perfect fcc at a0 (gpu_production.sh Cu-diff-v2, train.py --energy-difference), 200 s
# of training (the session's device time left was 386 s). From the repo root, carrying
# build-train/cache:
#   OUT=$OUT bash bench/results/training/gpu-2026-12-06/call2.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=200 HARD=250 RUNS="Cu-diff-v2" WORK=/tmp/train-v2-1206b \
  bash tools/train/gpu_production.sh
