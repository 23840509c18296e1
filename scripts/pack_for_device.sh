#!/usr/bin/env bash
# Packs what the GPU machine needs to build Kokkos + LAMMPS offline into .device/ (git-ignored,
# named in the device tool's `carry`): the verified Kokkos tarball and a trimmed LAMMPS tree
# (src/*.cpp|h, the packages we build, cmake/, python/lammps), about 10 MB as .tar.xz.
#
#   scripts/pack_for_device.sh [--kokkos-cuda]
#
# --kokkos-cuda: also build Kokkos with CUDA (HOPPER90) here (nvcc needs no GPU; 2.5 min on 2
# cores) and pack it with its stamp as .device/deps-gpu.tar.xz, unless that file exists (it may
# hold a LAMMPS-CUDA build from the GPU machine too). A GPU call then runs
# `NO_LAMMPS=1 scripts/gpu_session.sh ...` without building Kokkos (doc/build.md).
set -euo pipefail
kokkos_cuda=0
for arg in "$@"; do
  case "$arg" in
    --kokkos-cuda) kokkos_cuda=1 ;;
    *) echo "pack_for_device: unknown argument '$arg' (valid: --kokkos-cuda)" >&2; exit 2 ;;
  esac
done
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$repo/scripts/bootstrap.sh" --no-lammps >/dev/null   # verified downloads + unpacked LAMMPS src
# shellcheck disable=SC1090
source "$("$repo/scripts/bootstrap.sh" --print-env)"
out="$repo/.device"; mkdir -p "$out"
cp "$EDGEFRAME_DEPS/downloads/kokkos_5.0.2.orig.tar.gz" "$out/"
lsrc="$(dirname "$LAMMPS_SOURCE_DIR")"
name=lammps-20260704-trimmed.tar.xz
if [[ ! -f "$out/$name" ]]; then
  (cd "$lsrc" && find src -maxdepth 1 -type f \( -name '*.cpp' -o -name '*.h' -o -name 'Makefile*' -o -name '*.sh' \) -print0 \
     | tar --null -cJf "$out/$name" -T - src/fmt src/nlohmann src/STUBS src/PLUGIN src/KOKKOS src/MANYBODY \
         cmake python/lammps doc/lammps.1 doc/msi2lmp.1 LICENSE README)
  (cd "$out" && sha256sum "$name" > "$name.sha256")
fi
if [[ $kokkos_cuda == 1 && ! -f "$out/deps-gpu.tar.xz" ]]; then
  # The venv's torch (2.11.0+cu130) satisfies bootstrap's torch check; Kokkos needs none.
  PATH=/usr/local/cuda/bin:$PATH EDGEFRAME_PYTHON="$EDGEFRAME_PYTHON" "$repo/scripts/bootstrap.sh" --gpu --no-lammps
  (cd "$EDGEFRAME_DEPS" && tar cf - kokkos-5.0.2-cuda-hopper90 stamps/kokkos-5.0.2-cuda-hopper90 | xz -T0 -6 > "$out/deps-gpu.tar.xz")
fi
ls -la "$out"
