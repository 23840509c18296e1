#!/bin/bash
# Right after call 1 on the warm machine: the bootstrap resumes LAMMPS' build where call 1
# stopped it; the prefix (Kokkos and LAMMPS with CUDA, their stamps) is packed for later
# sessions (copied to .device/deps-gpu.tar.xz); then edgeframe (plugin, bench, unit tests) is
# built into build-gpu/ in the time left (ninja resumes it in call 2 if it is cut short).
set -u
T0=$SECONDS
prefix=/opt/edgeframe-deps
EDGEFRAME_PYTHON=python3 EDGEFRAME_TARBALLS=$PWD/.device PATH=/usr/local/cuda/bin:$PATH timeout 400 scripts/bootstrap.sh --gpu > $OUT/bootstrap.log 2>&1
rc=$?
echo "bootstrap rc $rc at $((SECONDS - T0)) s"; tail -3 $OUT/bootstrap.log
[[ $rc -eq 0 ]] || exit 1
(cd $prefix && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 \
   stamps/kokkos-5.0.2-cuda-hopper90 stamps/lammps-20260704-cuda-hopper90 | xz -T0 -6 > $OUT/deps-gpu.tar.xz)
ls -la $OUT/deps-gpu.tar.xz; echo "packed at $((SECONDS - T0)) s"
OUT=/tmp NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" timeout $((580 - (SECONDS - T0))) \
  scripts/gpu_session.sh build > $OUT/build-step.log 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" $OUT/build-step.log | head -5
echo "total $((SECONDS - T0)) s"
