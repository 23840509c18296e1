#!/bin/bash
# LAMMPS column A/B: the plugin of 529a32f against this tree's (shared step driver), same lmp,
# same host, one after the other, 512 L2 tf32 and fp32, each against the same reference.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 120 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
mkdir -p /tmp/old2 && tar xzf .device/old-src-529a32f.tar.gz -C /tmp/old2
( cmake -S /tmp/old2 -B /tmp/old2-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=$Kokkos_ROOT/bin/nvcc_wrapper \
    -DEDGEFRAME_BUILD_TESTS=OFF && timeout 230 ninja -C /tmp/old2-build edgeframeplugin edgeframe_bench ) > $R/old-build.log 2>&1
echo "old build rc $? at $((SECONDS - T0)) s"; tail -1 $R/old-build.log
for v in old new; do
  left=$((540 - (SECONDS - T0))); [[ $left -lt 60 ]] && break
  plugin=$PWD/build-gpu/src/lammps/edgeframeplugin.so; bench=$PWD/build-gpu/bench/edgeframe_bench
  [[ $v == old ]] && plugin=/tmp/old2-build/src/lammps/edgeframeplugin.so && bench=/tmp/old2-build/bench/edgeframe_bench
  timeout -s INT $((left / 2)) python3 tools/gate.py --bench $bench --lmp "$(command -v lmp)" --plugin $plugin --out $R/gate-$v \
    --budget $((left / 2 - 10)) --case-timeout 100 --cases diamond:512:L2 --columns engine-tf32,lammps-tf32 --repeats 11 --warmup 3 > $R/gate-$v.log 2>&1
  echo "-- $v"; grep -E "^\| diamond" $R/gate-$v/gate.md 2>/dev/null || tail -5 $R/gate-$v.log
done
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
