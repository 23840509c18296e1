#!/bin/bash
# Call 1 (one H200): LAMMPS with KOKKOS CUDA built here (the CPU machine is fresh: .device holds
# Kokkos CUDA only), its prefix packed back as deps-gpu.tar.xz for call 2.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
prefix=/opt/edgeframe-deps
mkdir -p $prefix && tar xJf .device/deps-gpu.tar.xz -C $prefix
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device timeout 540 scripts/bootstrap.sh --gpu > $R/bootstrap.log 2>&1
echo "bootstrap rc $? at $((SECONDS - T0)) s"; tail -4 $R/bootstrap.log
if [[ -f $prefix/stamps/lammps-20260704-cuda-hopper90 ]]; then
  (cd $prefix && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 stamps/kokkos-5.0.2-cuda-hopper90 \
     stamps/lammps-20260704-cuda-hopper90 | xz -T0 -6 > $OUT/deps-gpu.tar.xz)
  ls -la $OUT/deps-gpu.tar.xz; echo "packed at $((SECONDS - T0)) s"
fi
python3 -c "import sysconfig, scipy; print('python include', sysconfig.get_paths()['include'], 'scipy', scipy.__version__)" 2>&1
ls $(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")/Python.h 2>&1
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
