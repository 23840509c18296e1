#!/bin/bash
# LAMMPS 4 Jul 2026 with KOKKOS CUDA against the carried Kokkos CUDA (built on the CPU machine),
# packed back as deps-gpu.tar.xz for the next call (bench/gpu-session.md "A fresh CPU machine").
set -u
T0=$SECONDS
prefix=/opt/edgeframe-deps
mkdir -p $prefix && tar xJf .device/deps-gpu.tar.xz -C $prefix
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device timeout 540 scripts/bootstrap.sh --gpu > $OUT/bootstrap.log 2>&1
echo "bootstrap rc $? at $((SECONDS - T0)) s"; tail -3 $OUT/bootstrap.log
(cd $prefix && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 \
   stamps/kokkos-5.0.2-cuda-hopper90 stamps/lammps-20260704-cuda-hopper90 | xz -T0 -6 > $OUT/deps-gpu.tar.xz)
ls -la $OUT/deps-gpu.tar.xz; echo "total $((SECONDS - T0)) s"
