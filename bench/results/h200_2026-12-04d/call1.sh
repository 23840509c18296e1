#!/bin/bash
# LAMMPS with KOKKOS CUDA built on the device (a CPU-built one cannot load the device-built plugin:
# bench/gpu-session.md), from the carried Kokkos and trimmed LAMMPS tree; the prefix is packed back,
# then the plugin and the bench are built in the time left (the tree stays while the machine is
# warm, for call 2).
set -u
T0=$SECONDS
prefix=/opt/edgeframe-deps
mkdir -p $prefix && tar xJf .device/deps-gpu.tar.xz -C $prefix
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device PATH=/usr/local/cuda/bin:$PATH timeout 530 scripts/bootstrap.sh --gpu > $OUT/bootstrap.log 2>&1
echo "bootstrap rc $? at $((SECONDS - T0)) s"; tail -3 $OUT/bootstrap.log
(cd $prefix && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 \
   stamps/kokkos-5.0.2-cuda-hopper90 stamps/lammps-20260704-cuda-hopper90 | xz -T0 -6 > $OUT/deps-gpu.tar.xz)
ls -la $OUT/deps-gpu.tar.xz; echo "packed at $((SECONDS - T0)) s"
left=$((585 - (SECONDS - T0)))
if [[ $left -gt 30 ]]; then
  OUT=$OUT NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench" timeout $left scripts/gpu_session.sh build > $OUT/build-step.log 2>&1
  echo "build rc $? at $((SECONDS - T0)) s"; tail -3 $OUT/build-step.log
fi
echo "total $((SECONDS - T0)) s"
