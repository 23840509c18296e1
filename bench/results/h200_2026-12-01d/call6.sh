#!/bin/bash
# Model v2 on the H200, call 2: fairchem 2.24.0 (carried wheels) builds a random UMA-S 1.2
# checkpoint at full size (64 experts) on the GPU machine, converts it (tools/convert_fairchem.py),
# times its own fast paths, and predicts the 512-atom diamond in fp64 and fp32; then LAMMPS
# edgeframe/kk on the same GPU runs the converted file on that structure (fp64, fp32: against
# fairchem; tf32 timing).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/head && tar xzf .device/src-head.tar.gz -C /tmp/head && ln -sfn $PWD/.device /tmp/head/.device
cd /tmp/head
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 330 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $R/build-step.log | head -5
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
export PATH="$LAMMPS_ROOT/bin:$PATH"
bash .device/fairchem-wheels/INSTALL.sh /tmp/fcpkgs > $R/install.log 2>&1; echo "install rc $?"; tail -2 $R/install.log
PYTHONPATH=/tmp/fcpkgs PYTHONUNBUFFERED=1 timeout 250 python3 bench/fairchem_gpu_speed.py --workdir /tmp/fcspeed \
  --out $R/fairchem-speed.jsonl --paths fast_gpu_tf32,nitro_portable,fast_gpu_fp32 --steps 10 --budget 215 > $R/fairchem-speed.log 2>&1
echo "fairchem rc $? at $((SECONDS - T0)) s"; tail -25 $R/fairchem-speed.log
ls -la /tmp/fcspeed /tmp/fcspeed/ref 2>&1 | head -20
V2_TAGS="" V2_LAMMPS_TAGS=diamond512 V2_PRECISIONS=tf32 V2_CASES=diamond512 TIME_LEFT=$((575 - (SECONDS - T0))) \
  bench/v2_gpu_measure.sh /tmp/fcspeed/uma-s-1p2-full.safetensors $R/v2 /tmp/fcspeed/ref > $R/v2.log 2>&1
cat $R/v2.log
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
