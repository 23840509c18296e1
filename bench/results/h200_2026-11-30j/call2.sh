#!/bin/bash
# Session j, call 2 (one H200, nothing else on the host). The bench no longer keeps Kokkos tool
# callbacks registered outside its per-kernel pass (Kokkos fenced the device around every launch
# while they were); the step can be replayed as a CUDA graph (EvaluatorOptions::cuda_graph).
#  1. degree against degree4, A/B of one build (decides the default; doc/gpu-notes.md rule)
#  2. diamond 512 L2: fence-free engine, CUDA graph, the previous (fenced) bench, LAMMPS
#  3. diamond 4608 L2 tf32: engine, CUDA graph and torch.compile-tf32 (the 3x target)
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
# Call 1's bench (same engine code, tool callbacks registered for the whole run) before `build`.
tar xJOf .device/build-gpu-state.tar.xz build-gpu/bench/edgeframe_bench > /tmp/bench-fenced && chmod +x /tmp/bench-fenced
OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" \
  LAMMPS_TESTS=tests/lammps/test_ghost_exchange.py::test_bad_self_swaps_setting_is_an_error \
  scripts/gpu_session.sh build test
mv $R/build-gpu-state.tar.xz $OUT/ 2>/dev/null
OUT=$R GATE_OUT=gate-degree4-ab GATE_BUDGET=140 \
  GATE_ARGS="--bench-b-env EDGEFRAME_LOOP_ORDER=degree4 --cases diamond:512:L2,diamond:512:L3,bcc:4394:L3 --columns engine-fp32,engine-b-fp32,engine-tf32,engine-b-tf32 --repeats 21 --warmup 3" \
  scripts/gpu_session.sh gate
OUT=$R GATE_OUT=gate-graph-512 GATE_BUDGET=90 \
  GATE_ARGS="--bench-b /tmp/bench-fenced --case-timeout 90 --cases diamond:512:L2 --columns engine-tf32,engine-tf32-graph,engine-b-tf32,engine-fp32,engine-fp32-graph,engine-b-fp32,lammps-tf32 --repeats 21 --warmup 3" \
  scripts/gpu_session.sh gate
left=$((570 - (SECONDS - T0)))
echo "== $left s left for the 4608-atom gate"
OUT=$R GATE_OUT=gate-graph-4608 GATE_BUDGET=60 \
  GATE_ARGS="--case-timeout 150 --cases diamond:4400:L2 --columns engine-tf32,engine-tf32-graph,compile-tf32 --repeats 9 --warmup 3" \
  timeout -s INT -k 10 $((left - 20)) scripts/gpu_session.sh gate
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
ls -la $OUT
