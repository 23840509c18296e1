#!/bin/bash
# Session k, call 6 (one H200, alone, ~170 s): ncu on the Kokkos kernels of one L2 fp32 step at
# 512 atoms (scripts/gpu_session.sh ncu: speed of light, memory, occupancy, warp states,
# scheduler), to measure what keeps pack backward-edge, the gate and the unrotate kernels below
# 60 % of the copy rate with the current code (the last ncu read was the sixth run's).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export NO_LAMMPS=1 BUILD_TARGETS="edgeframe_bench" NO_STATE=1
OUT=$R timeout 120 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; tail -2 $R/build-step.log
OUT=$R NCU_TIMEOUT=$((165 - (SECONDS - T0))) scripts/gpu_session.sh ncu 2>&1 | tail -5
ls -la $R
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
