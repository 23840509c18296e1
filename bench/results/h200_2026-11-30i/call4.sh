#!/bin/bash
# Session i, call 4 (one H200, alone): the forward lets u and x go as soon as the next tensor
# exists; A/B against call 2's build (engine-b) at 512 and 4608 atoms, L2.
set -u
R=$OUT/r; mkdir -p $R
OUT=$R NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" \
  LAMMPS_TESTS=tests/lammps/test_ghost_exchange.py::test_bad_self_swaps_setting_is_an_error \
  scripts/gpu_session.sh build test
OUT=$R GATE_OUT=gate-forward-release GATE_BUDGET=60 \
  GATE_ARGS="--bench-b .device/bench-call2 --cases diamond:512:L2,diamond:4400:L2 --columns engine-tf32,engine-b-tf32,engine-fp32 --repeats 7 --warmup 2" \
  scripts/gpu_session.sh gate
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
