#!/bin/bash
# H200 call 5: the UMA gate (issue 26 item 1) as one command, bench/uma_gate.sh, with LAMMPS'
# CUDA build carried in .device/deps-gpu.tar.xz (built on the CPU machine:
# scripts/pack_for_device.sh --lammps-cuda) and fairchem from .device/fairchem-wheels
# (scripts/pack_fairchem_wheels.sh). Predictions: predictions.md.
# The tracked tree (44.6 MB) and all of .device (31 MB) are more than a call carries (64 MiB),
# so two calls on one warm machine:
#   STAGE=build  carry .device/deps-gpu.tar.xz and the trimmed LAMMPS tarball (+ .sha256): the
#                dependency prefix, the build (plugin, bench, units), the GPU units, lmp -h;
#   STAGE=gate   carry .device/fairchem-wheels: fairchem installed, bench/uma_gate.sh.
#   run from the repository root: OUT=$OUT STAGE=build bash bench/results/h200_2026-12-04c/call5.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
pack() { tar -C "$OUT" -cJf "$OUT/results.tar.xz" r; }
if [[ ${STAGE:-build} == build ]]; then
  export BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" NO_STATE=1
  OUT=$R timeout 300 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
  echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror|present|unpack" "$R/build-step.log" | head -8
fi
source "$(scripts/bootstrap.sh --gpu --print-env)"
export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}" PATH="$LAMMPS_ROOT/bin:$PATH"
mkdir -p "$LAMMPS_ROOT/include"   # LAMMPS' CMake config names it (scripts/gpu_session.sh does the same)
if [[ ${STAGE:-build} == build ]]; then
  # The GPU units of this tree (the review fixes of the bias epilogue), the CUDA-graph ones apart.
  (cd build-gpu && timeout 90 ./tests/edgeframe_unit_tests --gtest_brief=1 --gtest_filter=-*CudaGraph*) > "$R/unit-gpu.log" 2>&1
  echo "units rc $?"; (cd build-gpu && timeout 40 ./tests/edgeframe_unit_tests --gtest_filter=*CudaGraph*) >> "$R/unit-gpu.log" 2>&1
  echo "CUDA-graph units rc $? at $((SECONDS - T0)) s"; grep -E "column range|PASSED|FAILED" "$R/unit-gpu.log" | head -8
  lmp -h > "$R/lmp-h.log" 2>&1; echo "lmp -h rc $?: $(grep -c -i kokkos "$R/lmp-h.log") lines name KOKKOS"
  pack
  exit 0
fi
bash .device/fairchem-wheels/INSTALL.sh /tmp/fcpkgs > "$R/install.log" 2>&1
echo "install rc $?"
export PYTHONPATH=/tmp/fcpkgs
left=$((560 - (SECONDS - T0)))
TIME_LEFT=$((left / 2)) FAIRCHEM_BUDGET=$((left / 2 - 20)) timeout $((left - 10)) bash bench/uma_gate.sh /tmp/uma-gate \
  > "$R/uma-gate.out" 2>&1
echo "uma_gate rc $? at $((SECONDS - T0)) s"
cp /tmp/uma-gate/gate.md /tmp/uma-gate/gate.json /tmp/uma-gate/fairchem.jsonl "$R/" 2>/dev/null
tar -C /tmp/uma-gate --exclude='*.case' --exclude='*.data' --exclude='*.safetensors' --exclude='*.pt' \
  --exclude='*.dump' --exclude='*.f8' --exclude='*.npz' -cJf "$R/uma-gate-logs.tar.xz" fairchem.log edgeframe.log edgeframe 2>/dev/null
cat "$R/uma-gate.out"
pack
echo "total $((SECONDS - T0)) s"
