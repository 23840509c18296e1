#!/bin/bash
# Session 2026-12-01, call 7 (one H200, alone; the last device minutes): one more point towards
# the largest box that fits. Diamond 830 584 atoms L2 tf32 (47^3 cells, ~72 M edges), every layer
# recomputed in chunks of 500 000 edges (given by hand: at this size auto's count of the fixed part,
# 13 % above the measured one at 681 472 atoms, leaves it no room), no reference. Call 2's bench
# binary as built (as in call 6). Run twice: the first run's gate.py could not parse the bench's error line.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
tar xJf .device/build-gpu-state.tar.xz
prefix=/opt/edgeframe-deps; mkdir -p $prefix && tar xJf .device/deps-gpu.tar.xz -C $prefix
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device scripts/bootstrap.sh --gpu > $R/bootstrap.log 2>&1 || tail -5 $R/bootstrap.log
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$Kokkos_ROOT/lib:$LAMMPS_ROOT/lib:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
timeout 200 python3 tools/gate.py --bench build-gpu/bench/edgeframe_bench --out $R/gate-largest --budget 180 \
  --no-reference --case-timeout 180 --edge-chunk 500000 --cases diamond:830584:L2 --columns engine-tf32-recompute \
  --repeats 2 --warmup 1 > $R/gate.out 2>&1
grep -E "^\||^gate:" $R/gate.out | head -8
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
