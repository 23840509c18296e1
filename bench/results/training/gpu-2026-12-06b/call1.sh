#!/bin/bash
# Model v2 copper with the stacking polytypes (data family 'stacking', doc/data.md), one GPU, two
# processes at once: gpu_production.sh variants Cu-stack-v2 (the family drawn 6 times per
# epoch) and Cu-stackd-v2 (also fitted as energy differences over perfect fcc), both from the
# shipped Cu-v2. Predictions and the shipping rule: predictions.md, written before the call.
# From the repo root, carrying build-train/cache:
#   OUT=$OUT bash bench/results/training/gpu-2026-12-06b/call1.sh
set -u
OUT=${OUT:?set OUT}
OUT=$OUT MODEL=v2 BUDGET=${BUDGET:-420} HARD=${HARD:-480} RUNS="Cu-stack-v2 Cu-stackd-v2" WORK=/tmp/train-v2-1206c \
  bash tools/train/gpu_production.sh
