#!/bin/bash
# Session 2026-12-01, call 2 (one H200, alone). LAMMPS with KOKKOS CUDA, built on the CPU
# machine this time, carried in deps-gpu.tar.xz with Kokkos; call 1's build tree carried.
# 1: build the plugin + bench (the engine's objects come with call 1's state);
# 2: LAMMPS-level tests on the GPU (the plain style runs the engine on the GPU; /kk with
#    -k on g 1 -sf kk): device vs reference, behaviour (activations auto among them), the gate
#    tool's columns, non-finite reporting, plugin loading;
# 3: the gate at 512 atoms L2 with every column in one run: eager, compile, compile-tf32,
#    engine-fp32, engine-tf32, lammps-fp32, lammps-tf32.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export BUILD_TARGETS="edgeframeplugin edgeframe_bench"
OUT=$R timeout 300 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; tail -6 $R/build-step.log
mv $R/build-gpu-state.tar.xz $OUT/ 2>/dev/null
OUT=$R LAMMPS_TEST_TIMEOUT=230 LAMMPS_TEST_ARGS=-rA \
  LAMMPS_TESTS="tests/lammps/test_vs_reference.py tests/lammps/test_lammps_behaviour.py tests/lammps/test_gate_tool.py tests/lammps/test_non_finite.py tests/lammps/test_plugin_loads.py" \
  timeout 250 scripts/gpu_session.sh test > $R/test-step.log 2>&1; echo "test rc $? at $((SECONDS - T0)) s"; tail -6 $R/test-step.log
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)" $R/lammps-gpu.log | cut -c1-160 | head -60
left=$((570 - (SECONDS - T0)))
echo "== gate 512 L2, all columns, $left s left"
OUT=$R GATE_OUT=gate-512 GATE_BUDGET=$((left - 30)) \
  GATE_ARGS="--case-timeout 200 --cases diamond:512:L2 --columns engine-tf32,lammps-tf32,engine-fp32,lammps-fp32,eager,compile-tf32,compile --repeats 11 --warmup 3" \
  timeout -s INT -k 10 $((left - 10)) scripts/gpu_session.sh gate > $R/gate-512.out 2>&1
grep -E "^\|" $R/gate-512/gate.md 2>/dev/null || tail -20 $R/gate-512.out
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
