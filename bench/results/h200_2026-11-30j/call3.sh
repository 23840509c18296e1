#!/bin/bash
# Session j, call 3 (one H200, alone; the last call: NO_STATE). degree4 is now the default loop
# order. Build and units; bcc Cu 4394 L3 tf32 with the default; examples/gpu with carbon v9;
# then the gate with torch.compile at sizes not yet gated (diamond 2000 L2, bcc 2000 L3, bcc
# 512 L3), in what time is left.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
OUT=$R NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" \
  LAMMPS_TESTS=tests/lammps/test_gate_tool.py \
  scripts/gpu_session.sh build test
OUT=$R GATE_OUT=gate-bcc-default GATE_BUDGET=60 \
  GATE_ARGS="--cases bcc:4394:L3 --columns engine-tf32,engine-tf32-graph --repeats 21 --warmup 3" \
  scripts/gpu_session.sh gate
OUT=$R scripts/gpu_session.sh example
left=$((575 - (SECONDS - T0)))
echo "== $left s left for the compile gate"
OUT=$R GATE_OUT=gate-compile GATE_BUDGET=$((left - 120)) \
  GATE_ARGS="--case-timeout 150 --cases diamond:2000:L2,bcc:2000:L3,bcc:512:L3 --columns engine-fp32,engine-tf32,compile,compile-tf32 --repeats 9 --warmup 3" \
  timeout -s INT -k 10 $((left - 20)) scripts/gpu_session.sh gate
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
ls -la $OUT
