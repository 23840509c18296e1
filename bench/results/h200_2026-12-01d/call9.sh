#!/bin/bash
# Model v2 on the H200, the warp-per-row layer_norm_silu kernels: fairchem's fast_gpu_tf32 path
# and, in the same call on the same GPU, the engine (bench case mode, tf32) on the converted
# full-size UMA-S 1.2 (random weights), LAMMPS edgeframe/kk fp64 against fairchem, and the torch
# profile of the largest case. Short: the session's device time was nearly spent.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -cJf $OUT/results.tar.xz r; }  # after every stage: a call cut short still returns
mkdir -p /tmp/head && tar xzf .device/src-head.tar.gz -C /tmp/head && ln -sfn $PWD/.device /tmp/head/.device
cd /tmp/head
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 200 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $R/build-step.log | head -5
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
export PATH="$LAMMPS_ROOT/bin:$PATH"
bash .device/fairchem-wheels/INSTALL.sh /tmp/fcpkgs > $R/install.log 2>&1; echo "install rc $?"
PYTHONPATH=/tmp/fcpkgs PYTHONUNBUFFERED=1 timeout 110 python3 bench/fairchem_gpu_speed.py --workdir /tmp/fcspeed \
  --out $R/fairchem-speed.jsonl --paths fast_gpu_tf32 --steps 10 --budget 95 > $R/fairchem-speed.log 2>&1; rc=$?
pack; echo "fairchem rc $rc at $((SECONDS - T0)) s"; sed -n '/| structure/,$p' $R/fairchem-speed.log | head -6
POT=/tmp/fcspeed/uma-s-1p2-full.safetensors
TIME_LEFT=$((330 - (SECONDS - T0))) V2_LAMMPS_TAGS=" " V2_PRECISIONS="tf32" \
  bench/v2_gpu_measure.sh $POT $R/v2 /tmp/fcspeed/ref > $R/v2.log 2>&1
pack; cat $R/v2.log
[[ $((345 - (SECONDS - T0))) -gt 20 ]] && timeout 25 build-gpu/bench/edgeframe_bench --case $R/v2/cases/diamond4096.case \
  --potential $POT --precision tf32 --reps 5 --warmup 2 --torch-profile > $R/profile-diamond4096-tf32.log 2>&1
echo "profile rc $? at $((SECONDS - T0)) s"
rm -rf $R/v2/cases/*.data $R/v2/forces-*.dump
pack && rm -rf $R
echo "total $((SECONDS - T0)) s"
