#!/bin/bash
# Session 2026-12-01, call 4 (one H200, alone; the session's last device minutes): call 3's
# failed LAMMPS test again (its own assertion was wrong on GPUs, fixed), then bcc Cu 4394 L3,
# engine and LAMMPS side by side in tf32 and fp32.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 120 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"
OUT=$R LAMMPS_TEST_TIMEOUT=60 LAMMPS_TEST_ARGS=-rA LAMMPS_TESTS="tests/lammps/test_gate_tool.py" \
  timeout 70 scripts/gpu_session.sh test > $R/test-step.log 2>&1; echo "test rc $? at $((SECONDS - T0)) s"; tail -2 $R/test-step.log
left=$((300 - (SECONDS - T0)))
OUT=$R GATE_OUT=gate-bcc GATE_BUDGET=$((left - 20)) \
  GATE_ARGS="--case-timeout 90 --cases bcc:4394:L3 --columns engine-tf32,lammps-tf32,engine-fp32,lammps-fp32 --repeats 11 --warmup 3" \
  timeout -s INT -k 5 $((left - 5)) scripts/gpu_session.sh gate > $R/gate-bcc.out 2>&1
grep -E "^\|" $R/gate-bcc/gate.md 2>/dev/null || tail -10 $R/gate-bcc.out
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
