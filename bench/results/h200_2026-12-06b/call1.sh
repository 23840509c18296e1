#!/bin/bash
# A fresh CPU machine had no earlier .device/: LAMMPS with KOKKOS CUDA is built on the device by
# scripts/gpu_session.sh's lammps step (carried: .device/deps-gpu.tar.xz with Kokkos CUDA built on
# the CPU machine by scripts/pack_for_device.sh --kokkos-cuda, the trimmed LAMMPS tarball and its
# .sha256), and the prefix comes back as deps-gpu.tar.xz for the calls after it.
set -u
T0=$SECONDS
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
OUT=$OUT LAMMPS_BUDGET=${LAMMPS_BUDGET:-540} scripts/gpu_session.sh lammps
echo "lammps step rc $? at $((SECONDS - T0)) s"
