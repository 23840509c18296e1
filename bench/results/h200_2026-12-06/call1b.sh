#!/bin/bash
# Right after call 1 on the warm machine: the bootstrap resumes LAMMPS' build where call 1
# stopped it, then the prefix (Kokkos and LAMMPS with CUDA, their stamps) is packed for later
# calls (copied to .device/deps-gpu.tar.xz).
set -u
T0=$SECONDS
prefix=/opt/edgeframe-deps
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device PATH=/usr/local/cuda/bin:$PATH timeout 480 scripts/bootstrap.sh --gpu > $OUT/bootstrap.log 2>&1
rc=$?
echo "bootstrap rc $rc at $((SECONDS - T0)) s"; tail -3 $OUT/bootstrap.log
if [[ $rc -eq 0 ]]; then
  (cd $prefix && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 \
     stamps/kokkos-5.0.2-cuda-hopper90 stamps/lammps-20260704-cuda-hopper90 | xz -T0 -6 > $OUT/deps-gpu.tar.xz)
  ls -la $OUT/deps-gpu.tar.xz
fi
echo "total $((SECONDS - T0)) s"
