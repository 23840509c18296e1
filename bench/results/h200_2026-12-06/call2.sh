#!/bin/bash
# The unrotate forward pass with parts of each node's edge list on adjacent lanes (commit df2fcb6,
# kernel_common.hpp edge_list_parts) against the build before it (8d03be0), on a cold machine
# with the LAMMPS-CUDA prefix of call 1b carried as .device/deps-gpu.tar.xz:
#   1. the base bench: the two changed headers of 8d03be0 (.device/src-base-8d03be0.tar.gz) over
#      the tree, bench built, copied to /tmp/old-bench (it stays while the machine is warm);
#   2. the new tree: plugin, bench and unit tests built (incremental);
#   3. both benches' fenced per-kernel split, 512-atom L2 tf32 (the unrotate kernel's own time);
#   4. the GPU units of the change: the pack / unrotate kernels (both forms, the parted forward),
#      the evaluator's invariances under zero-contribution edges, the CUDA-graph tests.
# Predictions: predictions.md. Call 3 follows on the warm machine (the gate).
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R" /tmp/newsrc/kokkos
cp kokkos/kernel_common.hpp kokkos/unrotate_aggregate.hpp /tmp/newsrc/kokkos/
tar xzf .device/src-base-8d03be0.tar.gz
OUT=$R NO_STATE=1 BUILD_TARGETS="edgeframe_bench" timeout 330 scripts/gpu_session.sh build > "$R/build-base.log" 2>&1
echo "base build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-base.log" | head -5
cp build-gpu/bench/edgeframe_bench /tmp/old-bench
cp /tmp/newsrc/kokkos/* kokkos/
OUT=$R NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" timeout $((540 - (SECONDS - T0))) \
  scripts/gpu_session.sh build > "$R/build-new.log" 2>&1
echo "new build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-new.log" | head -5
source "$(scripts/bootstrap.sh --gpu --print-env)"
export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for b in /tmp/old-bench build-gpu/bench/edgeframe_bench; do
  echo "-- $b"
  timeout 60 $b --shape L2 --cells 4 --reps 11 --precision tf32 2>&1 | grep -E "^L2|^  step|unrotate|pack_backward_node"
done | tee "$R/split.log"
left=$((585 - (SECONDS - T0)))
(cd build-gpu && timeout $left ./tests/edgeframe_unit_tests --gtest_brief=1 \
  --gtest_filter='*PackUnrotate*:Evaluator.EdgesBeyond*:Evaluator.AKeptGraph*:*CudaGraph*') > "$R/units.log" 2>&1
echo "units rc $? at $((SECONDS - T0)) s"; tail -6 "$R/units.log"
echo "total $((SECONDS - T0)) s"
