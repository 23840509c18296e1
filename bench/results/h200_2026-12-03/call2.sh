#!/usr/bin/env bash
# H200 call 2: LAMMPS 2026-07-04 with KOKKOS CUDA built on the device against the carried
# Kokkos (bench/gpu-session.md "A fresh CPU machine"), packed back as $OUT/deps-gpu.tar.xz for
# .device/. Call 3 follows on the same warm machine.
set -u
prefix=/opt/edgeframe-deps
mkdir -p $prefix && tar xJf .device/deps-gpu.tar.xz -C $prefix
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device timeout 520 scripts/bootstrap.sh --gpu > $OUT/bootstrap.log 2>&1
echo "bootstrap rc $?"; tail -3 $OUT/bootstrap.log
(cd $prefix && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 \
   stamps/kokkos-5.0.2-cuda-hopper90 stamps/lammps-20260704-cuda-hopper90 | xz -T0 -6 > $OUT/deps-gpu.tar.xz)
ls -la $OUT/deps-gpu.tar.xz
