#!/bin/bash
# Issue 23's "every test passes on the H200": on the warm machine of call 2 (build-gpu/ there,
# else built again), the GoogleTest units on the GPU, then the LAMMPS-level tests with the CUDA
# plugin that cover issue 23's changes (graph per_rebuild and its kept, compacted graph,
# cuda_graph, the shared step driver; plain style on the GPU, /kk with -k on g 1 -sf kk).
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
if [[ ! -x build-gpu/tests/edgeframe_unit_tests ]]; then
  OUT=/tmp NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" timeout 330 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
  echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-step.log" | head -5
fi
OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" LAMMPS_TEST_ARGS=-rA \
  LAMMPS_TEST_TIMEOUT=$((540 - (SECONDS - T0) - 150)) \
  LAMMPS_TESTS="tests/lammps/test_lammps_behaviour.py tests/lammps/test_vs_reference.py tests/lammps/test_non_finite.py tests/lammps/test_plugin_loads.py tests/lammps/test_gate_tool.py" \
  LAMMPS_TEST_K="not mpi_ranks and not host_style_and_kokkos_two_threads and not nve and not npt and not restart and not rerun" \
  timeout $((570 - (SECONDS - T0))) scripts/gpu_session.sh test > "$R/test-step.log" 2>&1
echo "test step rc $? at $((SECONDS - T0)) s"
grep -E "tests from|PASSED|FAILED|SKIPPED" "$R/unit-gpu.log" | tail -8
grep -E "^(FAILED|ERROR)" "$R/lammps-gpu.log" | cut -c1-200 | head -20
echo "LAMMPS-level passed: $(grep -cE '^PASSED' "$R/lammps-gpu.log")"; tail -3 "$R/lammps-gpu.log"
tar -C "$R" -cJf "$OUT/tests.tar.xz" . && rm -rf "$R"
echo "total $((SECONDS - T0)) s"
