#!/bin/bash
# Session j, call 2 (one H200, nothing else on the host): degree against degree4 as an A/B of one
# build in one gate run (median of 21 steps, same reference forces; decides the default by the
# rule in doc/gpu-notes.md "Tenth session"), then the gate with torch.compile at the sizes not yet
# gated (diamond 2000 L2, bcc 512 and 2000 L3), then the per-kernel / GPU-idle profile.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" \
  LAMMPS_TESTS=tests/lammps/test_ghost_exchange.py::test_bad_self_swaps_setting_is_an_error \
  scripts/gpu_session.sh build test
mv $R/build-gpu-state.tar.xz $OUT/ 2>/dev/null
OUT=$R GATE_OUT=gate-degree4-ab GATE_BUDGET=200 \
  GATE_ARGS="--bench-b-env EDGEFRAME_LOOP_ORDER=degree4 --cases diamond:512:L2,diamond:512:L3,bcc:4394:L3 --columns engine-fp32,engine-b-fp32,engine-tf32,engine-b-tf32 --repeats 21 --warmup 3" \
  scripts/gpu_session.sh gate
left=$((560 - (SECONDS - T0)))
echo "== $left s left for the compile gate"
OUT=$R GATE_OUT=gate-compile GATE_BUDGET=$((left - 110)) \
  GATE_ARGS="--cases diamond:2000:L2,bcc:512:L3,bcc:2000:L3 --columns engine-fp32,engine-tf32,compile,compile-tf32 --repeats 9 --warmup 3" \
  timeout -s INT -k 10 $((left - 30)) scripts/gpu_session.sh gate
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
ls -la $OUT
