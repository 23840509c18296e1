#!/bin/bash
# Session 2026-12-01, call 6 (one H200, alone; the last device minutes): why "recompute layers 1"
# costs 13 % at L3 4096 tf32 (call 1). Call 2's bench binary as built (its engine differs from
# HEAD only by the two A/B switches, off, and the memory model's band-gradient term, which does
# not change this plan): the fenced per-kernel split of the 4096-atom L3 step, keep against auto
# under a 24 GB budget.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
tar xJf .device/build-gpu-state.tar.xz
prefix=/opt/edgeframe-deps; mkdir -p $prefix && tar xJf .device/deps-gpu.tar.xz -C $prefix
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device scripts/bootstrap.sh --gpu > $R/bootstrap.log 2>&1 || tail -5 $R/bootstrap.log
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$Kokkos_ROOT/lib:$LAMMPS_ROOT/lib:${LD_LIBRARY_PATH:-}"
echo "ready at $((SECONDS - T0)) s"
for a in "--activations keep" "--memory-budget 24"; do
  echo "-- $a" >> $R/recompute-split.log
  timeout 90 build-gpu/bench/edgeframe_bench --shape L3 --cells 8 --reps 3 --precision tf32 $a >> $R/recompute-split.log 2>&1
done
grep -vE "^\s*$" $R/recompute-split.log | head -70
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
