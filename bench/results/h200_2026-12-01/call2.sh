#!/bin/bash
# Session 2026-12-01, call 2 (one H200): LAMMPS with KOKKOS CUDA built here after all (on the CPU
# machine it had reached 246 of 562 objects after 20 minutes and would have taken about 80 more):
# 1: bootstrap --gpu (Kokkos carried, LAMMPS 16 cores), its prefix packed back as deps-gpu.tar.xz;
# 2: with the time left, edgeframe (plugin, bench, units) from call 1's build tree, the units
#    (the memory-model test changed since call 1) and the plugin-loading LAMMPS tests.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
prefix=/opt/edgeframe-deps
mkdir -p $prefix && tar xJf .device/deps-gpu.tar.xz -C $prefix
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device timeout 520 scripts/bootstrap.sh --gpu > $R/bootstrap.log 2>&1
echo "bootstrap rc $? at $((SECONDS - T0)) s"; tail -4 $R/bootstrap.log
if [[ -f $prefix/stamps/lammps-20260704-cuda-hopper90 ]]; then
  (cd $prefix && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 stamps/kokkos-5.0.2-cuda-hopper90 \
     stamps/lammps-20260704-cuda-hopper90 | xz -T0 -6 > $OUT/deps-gpu.tar.xz)
  ls -la $OUT/deps-gpu.tar.xz; echo "packed at $((SECONDS - T0)) s"
  left=$((575 - (SECONDS - T0)))
  if [[ $left -gt 60 ]]; then
    OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" LAMMPS_TESTS=tests/lammps/test_plugin_loads.py \
      LAMMPS_TEST_TIMEOUT=$((left - 30)) timeout $((left - 5)) scripts/gpu_session.sh build test > $R/build-test.log 2>&1
    echo "build+test rc $? at $((SECONDS - T0)) s"; tail -14 $R/build-test.log
    mv $R/build-gpu-state.tar.xz $OUT/ 2>/dev/null
  fi
fi
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
