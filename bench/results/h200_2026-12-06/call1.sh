#!/bin/bash
# LAMMPS with KOKKOS CUDA built on the device (a CPU-built one cannot load the device-built plugin:
# bench/gpu-session.md), from the carried Kokkos and trimmed LAMMPS tree. The build takes more
# than one call: this one stops the bootstrap in time to pack; call 1b, on the still warm machine,
# resumes it and packs the finished prefix for the later calls.
set -u
T0=$SECONDS
prefix=/opt/edgeframe-deps
mkdir -p $prefix && tar xJf .device/deps-gpu.tar.xz -C $prefix
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device PATH=/usr/local/cuda/bin:$PATH timeout 560 scripts/bootstrap.sh --gpu > $OUT/bootstrap.log 2>&1
echo "bootstrap rc $? at $((SECONDS - T0)) s"; tail -3 $OUT/bootstrap.log
echo "total $((SECONDS - T0)) s"
