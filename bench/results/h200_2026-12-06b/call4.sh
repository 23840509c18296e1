#!/bin/bash
# Issue 28 item 1 on the one-GPU machine: tests/lammps/test_ghost_exchange.py with the CUDA
# plugin (/kk with -k on g 1 -sf kk), its 2- and 4-rank cases sharing the one card (per-layer
# exchange, staged and direct swaps, CUDA IPC between ranks of one device), on the warm machine of
# call 2 or 3 (build-gpu/ there, else built again).
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
if [[ ! -f build-gpu/src/lammps/edgeframeplugin.so ]]; then
  OUT=/tmp NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench" timeout 330 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
  echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-step.log" | head -5
fi
OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_bench" LAMMPS_TEST_ARGS=-rA \
  LAMMPS_TEST_TIMEOUT=$((560 - (SECONDS - T0))) LAMMPS_TESTS="tests/lammps/test_ghost_exchange.py" \
  timeout $((575 - (SECONDS - T0))) scripts/gpu_session.sh test > "$R/test-step.log" 2>&1
echo "test step rc $? at $((SECONDS - T0)) s"
grep -E "^(FAILED|ERROR)" "$R/lammps-gpu.log" | cut -c1-200 | head -20
echo "passed: $(grep -cE '^PASSED' "$R/lammps-gpu.log"), skipped: $(grep -cE '^SKIPPED' "$R/lammps-gpu.log")"; tail -3 "$R/lammps-gpu.log"
tar -C "$R" -cJf "$OUT/tests-exchange.tar.xz" . && rm -rf "$R"
echo "total $((SECONDS - T0)) s"
