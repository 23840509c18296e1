#!/usr/bin/env bash
# The main job: builds what is missing (scripts/build.sh), then runs the diamond MD example
# (examples/diamond/in.diamond: NVE, NVT, NPT with potentials/C-diamond-v2.safetensors) on Kokkos
# OpenMP with every core of this machine. Extra arguments go to lmp, e.g. -var steps 400.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export EDGEFRAME_BUILD_DIR="${EDGEFRAME_BUILD_DIR:-$repo/build}"
"$repo/scripts/build.sh"
# shellcheck disable=SC1090
source "$("$repo/scripts/bootstrap.sh" --print-env)"
cd "$repo"
potential=potentials/C-diamond-v2.safetensors
[[ -f "$potential" ]] || { echo "run_example.sh: $potential is missing (see potentials/README.md)" >&2; exit 1; }
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
mkdir -p "$EDGEFRAME_BUILD_DIR/example-diamond"
lmp -in examples/diamond/in.diamond -log "$EDGEFRAME_BUILD_DIR/example-diamond/log.lammps" \
    -var plugin "$EDGEFRAME_BUILD_DIR/src/lammps/edgeframeplugin.so" -var potential "$potential" "$@"
echo "run_example.sh: log in $EDGEFRAME_BUILD_DIR/example-diamond/log.lammps"
