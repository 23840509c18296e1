#!/bin/bash
# LAMMPS-CUDA carried (call 2): the plugin with the shared step driver on the GPU.
# 1: build plugin + bench; 2: LAMMPS-level GPU tests (plain style on the GPU, /kk device path);
# 3: gate 512 L2, engine and LAMMPS columns side by side.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 200 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $R/build-step.log | head -5
OUT=$R LAMMPS_TEST_TIMEOUT=170 LAMMPS_TEST_ARGS=-rA LAMMPS_TEST_K="not mpi_ranks and not host_style_and_kokkos_two_threads and not test_md_ and not nve" \
  LAMMPS_TESTS="tests/lammps/test_vs_reference.py tests/lammps/test_non_finite.py tests/lammps/test_gpu_memory.py tests/lammps/test_plugin_loads.py" \
  timeout 185 scripts/gpu_session.sh test > $R/test-step.log 2>&1; echo "test rc $? at $((SECONDS - T0)) s"; tail -3 $R/test-step.log
grep -E "^(FAILED|ERROR)" $R/lammps-gpu.log | cut -c1-200 | head -20; echo "passed: $(grep -cE '^PASSED' $R/lammps-gpu.log)"
left=$((545 - (SECONDS - T0)))
echo "== gate 512 L2, $left s left"
OUT=$R GATE_OUT=gate-512 GATE_BUDGET=$((left - 30)) \
  GATE_ARGS="--case-timeout 120 --cases diamond:512:L2 --columns engine-tf32,lammps-tf32,engine-fp32,lammps-fp32 --repeats 11 --warmup 3" \
  timeout -s INT -k 5 $((left - 8)) scripts/gpu_session.sh gate > $R/gate-512.out 2>&1
grep -E "^\|" $R/gate-512/gate.md 2>/dev/null || tail -10 $R/gate-512.out
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
