#!/bin/bash
# One H200, NO_LAMMPS (Kokkos CUDA carried, built on the CPU machine): the kernel-form
# clean-up against the commit before it (529a32f).
# 1: build engine, units and bench (this tree); 2: GoogleTest units on the GPU;
# 3: build the bench of 529a32f (carried as .device/old-src-529a32f.tar.gz);
# 4: gate, engine columns of both builds side by side (engine-b = 529a32f), same reference.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export NO_LAMMPS=1 NO_STATE=1
OUT=$R timeout 330 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $R/build-step.log | head -8
OUT=$R timeout 150 scripts/gpu_session.sh test > $R/test-step.log 2>&1; echo "test rc $? at $((SECONDS - T0)) s"; tail -6 $R/test-step.log
grep -E "FAILED|Failure" $R/unit-gpu.log | head -20
# the old bench, same compiler and deps
source "$(scripts/bootstrap.sh --gpu --print-env)"
mkdir -p /tmp/old && tar xzf .device/old-src-529a32f.tar.gz -C /tmp/old
( cmake -S /tmp/old -B /tmp/old-build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=$Kokkos_ROOT/bin/nvcc_wrapper \
    -DEDGEFRAME_BUILD_PLUGIN=OFF -DEDGEFRAME_BUILD_TESTS=OFF && timeout 200 ninja -C /tmp/old-build edgeframe_bench ) > $R/old-build.log 2>&1
echo "old build rc $? at $((SECONDS - T0)) s"; tail -2 $R/old-build.log
left=$((560 - (SECONDS - T0)))
echo "== gate, $left s left"
if [[ -x /tmp/old-build/bench/edgeframe_bench && $left -gt 90 ]]; then
  OUT=$R GATE_OUT=gate-ab GATE_BUDGET=$((left - 40)) \
    GATE_ARGS="--bench-b /tmp/old-build/bench/edgeframe_bench --case-timeout 120 --cases diamond:512:L2,bcc:4394:L3,diamond:4400:L2 --columns engine-tf32,engine-b-tf32,engine-fp32,engine-b-fp32 --repeats 11 --warmup 3" \
    timeout -s INT -k 10 $((left - 15)) scripts/gpu_session.sh gate > $R/gate-ab.out 2>&1
  grep -E "^\|" $R/gate-ab/gate.md 2>/dev/null || tail -20 $R/gate-ab.out
fi
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
