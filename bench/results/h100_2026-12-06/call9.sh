#!/bin/bash
# The engine with the wgmma kernel's 3 x 3 tiling (three warpgroups, 192 x 128 per block; call
# 7): GPU units, the microbenchmark (the engine's 3 x 3 beside 2 x 3), the step in tf32x3, tf32
# and fp64 with forces against fp64 (bench/split_mode_call.sh). About 330 s cold.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call9.sh
OUT=$OUT bash bench/split_mode_call.sh
