#!/usr/bin/env bash
# Packs what the GPU machine needs to build Kokkos + LAMMPS offline into .device/ (git-ignored,
# named in the device tool's `carry`): the verified Kokkos tarball and a trimmed LAMMPS tree
# (src/*.cpp|h, the packages we build, cmake/, python/lammps), about 10 MB as .tar.xz.
set -euo pipefail
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
ls -la "$out"
