#!/bin/bash
# Model v2 on the H200, one run side by side: fairchem 2.24.0 (carried wheels) builds a random
# UMA-S 1.2 checkpoint at full size (64 experts), converts it (tools/convert_fairchem.py) and
# times its fast paths (fast_gpu_tf32, fast_gpu_fp32) on the three speed structures; then, on
# the same GPU in the same call, the engine (bench case mode) and LAMMPS edgeframe/kk run the
# converted file on the same structures (bench/v2_cases.py), LAMMPS against fairchem's fp64 and
# fp32 predictions, and the torch profile of each tf32 case.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/head && tar xzf .device/src-head.tar.gz -C /tmp/head && ln -sfn $PWD/.device /tmp/head/.device
cd /tmp/head
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 330 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $R/build-step.log | head -5
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
export PATH="$LAMMPS_ROOT/bin:$PATH"
bash .device/fairchem-wheels/INSTALL.sh /tmp/fcpkgs > $R/install.log 2>&1; echo "install rc $?"
PYTHONPATH=/tmp/fcpkgs PYTHONUNBUFFERED=1 timeout 200 python3 bench/fairchem_gpu_speed.py --workdir /tmp/fcspeed \
  --out $R/fairchem-speed.jsonl --paths fast_gpu_tf32,fast_gpu_fp32 --steps 10 --budget 170 > $R/fairchem-speed.log 2>&1
echo "fairchem rc $? at $((SECONDS - T0)) s"; sed -n '/| structure/,$p' $R/fairchem-speed.log | head -12
POT=/tmp/fcspeed/uma-s-1p2-full.safetensors
TIME_LEFT=$((520 - (SECONDS - T0))) V2_LAMMPS_TAGS="diamond512 bcc4394" V2_PRECISIONS="tf32 fp32" \
  bench/v2_gpu_measure.sh $POT $R/v2 /tmp/fcspeed/ref > $R/v2.log 2>&1
cat $R/v2.log
for tag in diamond4096 bcc4394 diamond512; do
  [[ $((575 - (SECONDS - T0))) -lt 25 ]] && { echo "profile $tag skipped: time"; continue; }
  timeout 40 build-gpu/bench/edgeframe_bench --case $R/v2/cases/$tag.case --potential $POT --precision tf32 --reps 5 \
    --warmup 2 --torch-profile > $R/profile-$tag-tf32.log 2>&1
  echo "profile $tag rc $? at $((SECONDS - T0)) s"
done
rm -rf $R/v2/cases/*.data $R/v2/forces-*.dump
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
