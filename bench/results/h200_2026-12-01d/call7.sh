#!/bin/bash
# Model v2 on the H200, profile: build plugin + bench from HEAD's sources, a random model v2 of
# UMA-S's shape (bench/v2_random_potential.py), then bench case mode with --torch-profile (the
# fenced Kokkos kernel split and the torch profile) on the three speed structures.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
mkdir -p /tmp/head && tar xzf .device/src-head.tar.gz -C /tmp/head && ln -sfn $PWD/.device /tmp/head/.device
cd /tmp/head
export BUILD_TARGETS="edgeframe_bench" NO_STATE=1
OUT=$R timeout 330 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $R/build-step.log | head -5
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
python3 bench/v2_random_potential.py /tmp/uma-shape.safetensors
python3 bench/v2_cases.py --potential /tmp/uma-shape.safetensors --out /tmp/cases --cases diamond512,bcc4394,diamond4096
for c in diamond4096:tf32 bcc4394:tf32 diamond512:tf32 diamond4096:fp32; do
  tag=${c%%:*} prec=${c##*:}
  timeout 120 build-gpu/bench/edgeframe_bench --case /tmp/cases/$tag.case --potential /tmp/uma-shape.safetensors \
    --precision $prec --reps 5 --warmup 2 --torch-profile > $R/profile-$tag-$prec.log 2>&1
  echo "$tag $prec rc $? at $((SECONDS - T0)) s"
done
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
