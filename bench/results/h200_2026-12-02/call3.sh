#!/bin/bash
# Right after call2.sh on the warm machine: the fix deform tests of graph per_rebuild with the
# CUDA plugin (1 and 2 ranks, edgeframe/kk), then the 512-atom columns again (a second sample
# of the LAMMPS -graph column against the engine's, skin 0).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
pack() { tar -C $OUT -cJf $OUT/results.tar.xz r; }
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 240 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"
OUT=$R LAMMPS_TEST_TIMEOUT=150 LAMMPS_TEST_ARGS=-rA LAMMPS_TESTS="tests/lammps/test_lammps_behaviour.py" LAMMPS_TEST_K="deform" \
  timeout 170 scripts/gpu_session.sh test > $R/test.out 2>&1
grep -E "PASSED|FAILED|ERROR|passed|failed" $R/lammps-gpu.log | tail -8; pack
OUT=$R GATE_OUT=gate-512b GATE_BUDGET=150 \
  GATE_ARGS="--case-timeout 100 --cases diamond:512:L2 --lmp-skin 0.0 --columns lammps-tf32-graph,engine-tf32-graph,engine-tf32,lammps-tf32 --repeats 21 --warmup 3" \
  timeout -s INT -k 10 200 scripts/gpu_session.sh gate > $R/gate-512b.out 2>&1
pack; grep -E "^\|" $R/gate-512b/gate.md 2>/dev/null || tail -20 $R/gate-512b.out
echo "total $((SECONDS - T0)) s"
