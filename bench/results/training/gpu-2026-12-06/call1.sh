#!/bin/bash
# Model v2 potentials, GPU training call 1 of this directory (one H100 or H200), two processes at
# once: copper from the shipped Cu-v2 with the fault and relaxed frames' energy x200
# (gpu_production.sh Cu-sfw2-v2), carbon version 3 once more at lr 2e-4 (C-e100b-v2). From the
# repo root, carrying build-train/cache (built on any machine: potentials/README.md "Retraining"):
#   OUT=$OUT bash bench/results/training/gpu-2026-12-06/call1.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=450 HARD=505 RUNS="C-e100b-v2 Cu-sfw2-v2" WORK=/tmp/train-v2-1206 \
  bash tools/train/gpu_production.sh
