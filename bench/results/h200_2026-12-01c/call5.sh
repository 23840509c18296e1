#!/bin/bash
# Model v2 on the H200, call 1: build plugin + bench from HEAD's sources (the working tree holds
# another engineer's unfinished exchange refactor), then the engine and LAMMPS columns of a
# random model v2 of UMA-S's shape (bench/v2_random_potential.py: L2 mmax2 C128 T4 r_cut 6).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/head && tar xzf .device/src-head.tar.gz -C /tmp/head && ln -sfn $PWD/.device /tmp/head/.device
cd /tmp/head
nvidia-smi -L; python3 -c 'import torch; print(torch.__version__, torch.cuda.device_count())'
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 360 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $R/build-step.log | head -8
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
export PATH="$LAMMPS_ROOT/bin:$PATH"
python3 bench/v2_random_potential.py /tmp/uma-shape.safetensors
TIME_LEFT=$((565 - (SECONDS - T0))) bench/v2_gpu_measure.sh /tmp/uma-shape.safetensors $R/v2 > $R/v2.log 2>&1
cat $R/v2.log
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
