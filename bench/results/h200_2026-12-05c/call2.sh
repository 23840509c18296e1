#!/bin/bash
# Device calls 2 and 3: bf16 storage (so2_convolution) against the base b228b94, on one warm
# machine: call 2 builds both and runs the new tree's GPU units, call 3 times both builds.
# Carried: .device/deps-gpu.tar.xz, the Kokkos and trimmed LAMMPS tarballs, .device/src-head.tar.gz
# (git archive b228b94, the list in bench/kernel_ab.sh). Predictions: predictions.md.
#   call 2: OUT=$OUT STAGE=build bash bench/results/h200_2026-12-05c/call2.sh
#   call 3: OUT=$OUT STAGE=bench bash bench/results/h200_2026-12-05c/call2.sh
nvidia-smi --query-gpu=name,memory.total --format=csv
AB_PRECISIONS="bf16 tf32" AB_EXTRA=0 bash bench/kernel_ab.sh
