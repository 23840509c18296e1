#!/bin/bash
# Session 2026-12-01, call 3 (one H200, alone): LAMMPS-CUDA (built in call 2) and call 2's build
# tree carried, nothing to compile.
# 1: LAMMPS-level tests on the GPU (device vs reference: the plain style and /kk, single rank;
#    the gate tool's columns; non-finite and out-of-memory reporting; activations auto);
# 2: the gate at 512 atoms L2, every column in one run (eager, compile, compile-tf32,
#    engine-fp32, engine-tf32, lammps-fp32, lammps-tf32);
# 3: with the time left, 4608 atoms L2: engine-tf32 and lammps-tf32 (then fp32) side by side.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 200 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $R/build-step.log | head -5
OUT=$R LAMMPS_TEST_TIMEOUT=150 LAMMPS_TEST_ARGS=-rA LAMMPS_TEST_K="not mpi_ranks and not host_style_and_kokkos_two_threads and not test_md_ and not nve" \
  LAMMPS_TESTS="tests/lammps/test_vs_reference.py tests/lammps/test_gate_tool.py tests/lammps/test_non_finite.py tests/lammps/test_gpu_memory.py tests/lammps/test_lammps_behaviour.py::test_auto_activations_recompute_under_a_small_budget_and_match_keep" \
  timeout 165 scripts/gpu_session.sh test > $R/test-step.log 2>&1; echo "test rc $? at $((SECONDS - T0)) s"; tail -4 $R/test-step.log
grep -E "^(FAILED|ERROR)" $R/lammps-gpu.log | cut -c1-200 | head -20; grep -cE "^PASSED" $R/lammps-gpu.log
left=$((555 - (SECONDS - T0)))
echo "== gate 512 L2, all columns, $left s left"
OUT=$R GATE_OUT=gate-512 GATE_BUDGET=$((left - 150)) \
  GATE_ARGS="--case-timeout 150 --cases diamond:512:L2 --columns engine-tf32,lammps-tf32,engine-fp32,lammps-fp32,eager,compile-tf32,compile --repeats 11 --warmup 3" \
  timeout -s INT -k 10 $((left - 130)) scripts/gpu_session.sh gate > $R/gate-512.out 2>&1
grep -E "^\|" $R/gate-512/gate.md 2>/dev/null || tail -20 $R/gate-512.out
left=$((560 - (SECONDS - T0)))
echo "== gate 4608 L2, engine and LAMMPS, $left s left"
OUT=$R GATE_OUT=gate-4608 GATE_BUDGET=$((left - 40)) \
  GATE_ARGS="--case-timeout 100 --cases diamond:4400:L2 --columns engine-tf32,lammps-tf32,engine-fp32,lammps-fp32 --repeats 11 --warmup 3" \
  timeout -s INT -k 5 $((left - 8)) scripts/gpu_session.sh gate > $R/gate-4608.out 2>&1
grep -E "^\|" $R/gate-4608/gate.md 2>/dev/null || tail -10 $R/gate-4608.out
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
