#!/bin/bash
# Session i, call 2 (one H200, nothing else running on the host): the g-recompute / grad_rot
# in-place build against the previous build (A/B in one gate run, same reference forces), the
# degree and degree4 loop orders side by side, the GPU units.
set -u
R=$OUT/r; mkdir -p $R
# The previous build's bench (call 1: degree default, g kept) before `build` replaces it.
tar xJOf .device/build-gpu-state.tar.xz build-gpu/bench/edgeframe_bench > /tmp/bench-old && chmod +x /tmp/bench-old
OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" \
  LAMMPS_TESTS=tests/lammps/test_ghost_exchange.py::test_bad_self_swaps_setting_is_an_error \
  scripts/gpu_session.sh build test
mv $R/build-gpu-state.tar.xz $OUT/ 2>/dev/null
OUT=$R LOOP_ORDERS="degree degree4" scripts/gpu_session.sh looporder
OUT=$R GATE_OUT=gate-ab GATE_BUDGET=230 \
  GATE_ARGS="--bench-b /tmp/bench-old --cases diamond:512:L2,bcc:4394:L3,diamond:4400:L2 --columns engine-tf32,engine-b-tf32,engine-fp32,engine-b-fp32 --repeats 7 --warmup 2" \
  scripts/gpu_session.sh gate
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
ls -la $OUT
