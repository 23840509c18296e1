#!/bin/bash
# Session j, call 4 (one H200, alone; ~320 s of device time left): no build. Call 2's build
# (fence-free bench; degree is its compiled default, so degree4 comes through the environment)
# carried as its build state. 1: where the 4096-atom L2 tf32 step goes (per-kernel split and GPU
# time per kernel family), the size of the 3x target. 2: diamond 32k L2, engine only (torch.compile
# would need about 7x its 4608-atom 55 GB), in the time left.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export EDGEFRAME_LOOP_ORDER=degree4
tar xJf .device/build-gpu-state.tar.xz
OUT=$R scripts/gpu_session.sh > $R/deps.log 2>&1    # no step: only unpacks the carried Kokkos/LAMMPS build
source "$(scripts/bootstrap.sh --gpu --print-env)"
export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
timeout 120 build-gpu/bench/edgeframe_bench --shape L2 --cells 8 --reps 3 --precision tf32 \
  --torch-profile > $R/profile-4096-tf32.log 2>&1
cat $R/profile-4096-tf32.log
left=$((215 - (SECONDS - T0)))
echo "== $left s left for the 32k gate"
OUT=$R GATE_OUT=gate-32k GATE_BUDGET=$((left - 60)) \
  GATE_ARGS="--case-timeout 120 --cases diamond:32000:L2 --columns engine-tf32,engine-fp32 --repeats 5 --warmup 2" \
  timeout -s INT -k 10 $((left - 10)) scripts/gpu_session.sh gate
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
