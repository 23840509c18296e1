#!/bin/bash
# Call 1b: call 1 ran out of its 540 s in the LAMMPS build; on the still-warm machine the
# bootstrap resumes its ninja build, packs the prefix, then runs call 2's steps in the time left.
set -u
T0=$SECONDS
prefix=/opt/edgeframe-deps
ls $prefix/build 2>&1 | head -3
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device timeout 400 scripts/bootstrap.sh --gpu > $OUT/bootstrap.log 2>&1
echo "bootstrap rc $? at $((SECONDS - T0)) s"; tail -3 $OUT/bootstrap.log
if [[ -f $prefix/stamps/lammps-20260704-cuda-hopper90 ]]; then
  (cd $prefix && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 stamps/kokkos-5.0.2-cuda-hopper90 \
     stamps/lammps-20260704-cuda-hopper90 | xz -T0 -3 > $OUT/deps-gpu.tar.xz)
  ls -la $OUT/deps-gpu.tar.xz; echo "packed at $((SECONDS - T0)) s"
fi
echo "total $((SECONDS - T0)) s"
