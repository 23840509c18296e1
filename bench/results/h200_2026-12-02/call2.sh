#!/bin/bash
# Issue 23 item 5 on the H200: the LAMMPS column with graph per_rebuild and cuda_graph yes against
# the engine (eager and replayed) and the default LAMMPS column, one gate run per skin; then the
# LAMMPS-level tests of the new path with the CUDA plugin. Runs right after call1.sh (build tree
# and dependency prefix still on the warm machine; else both are unpacked/built again).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -cJf $OUT/results.tar.xz r; }
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 240 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"
grep -E "built in|rror" $R/build-step.log | head -5
OUT=$R GATE_OUT=gate-skin0 GATE_BUDGET=200 \
  GATE_ARGS="--case-timeout 120 --cases diamond:512:L2,diamond:4400:L2 --lmp-skin 0.0 --columns engine-tf32,engine-tf32-graph,lammps-tf32,lammps-tf32-graph --repeats 21 --warmup 3" \
  timeout -s INT -k 10 260 scripts/gpu_session.sh gate > $R/gate-skin0.out 2>&1
pack; grep -E "^\|" $R/gate-skin0/gate.md 2>/dev/null || tail -20 $R/gate-skin0.out
echo "gate 1 at $((SECONDS - T0)) s"
left=$((500 - (SECONDS - T0)))
if [[ $left -gt 60 ]]; then
  OUT=$R GATE_OUT=gate-skin05 GATE_BUDGET=$((left - 50)) \
    GATE_ARGS="--case-timeout 100 --cases diamond:512:L2 --lmp-skin 0.5 --columns lammps-tf32-graph,engine-tf32-graph --repeats 21 --warmup 3" \
    timeout -s INT -k 10 $((left - 20)) scripts/gpu_session.sh gate > $R/gate-skin05.out 2>&1
  pack; grep -E "^\|" $R/gate-skin05/gate.md 2>/dev/null || tail -20 $R/gate-skin05.out
fi
left=$((570 - (SECONDS - T0)))
if [[ $left -gt 40 ]]; then
  OUT=$R LAMMPS_TEST_TIMEOUT=$((left - 10)) LAMMPS_TEST_ARGS=-rA \
    LAMMPS_TESTS="tests/lammps/test_gate_tool.py tests/lammps/test_lammps_behaviour.py" LAMMPS_TEST_K="graph_column or per_rebuild" \
    timeout $left scripts/gpu_session.sh test > $R/test.out 2>&1
  grep -E "PASSED|FAILED|ERROR|passed|failed" $R/lammps-gpu.log | tail -8
fi
pack
echo "total $((SECONDS - T0)) s"
