#!/usr/bin/env bash
# Configure and build edgeframe (engine, plugin, tests) against the cached dependencies.
# usage: scripts/build.sh [--gpu] [extra cmake -D options...]
# env: EDGEFRAME_BUILD_DIR (default <repo>/build or <repo>/build-gpu)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
boot_args=()
if [[ "${1:-}" == "--gpu" ]]; then boot_args+=(--gpu); shift; fi
"$repo/scripts/bootstrap.sh" "${boot_args[@]}"
# shellcheck disable=SC1090
source "$("$repo/scripts/bootstrap.sh" "${boot_args[@]}" --print-env)"
default_dir="$repo/build"; [[ "$EDGEFRAME_VARIANT" == cpu ]] || default_dir="$repo/build-gpu"
build_dir="${EDGEFRAME_BUILD_DIR:-$default_dir}"
cmake_args=(-G Ninja)
[[ "$EDGEFRAME_VARIANT" == cpu ]] || cmake_args+=("-DCMAKE_CXX_COMPILER=$Kokkos_ROOT/bin/nvcc_wrapper")
# The Python module (edgeframe._engine, the ASE calculator) when the venv has pybind11 (tools/requirements.txt).
if pybind11_dir="$("$EDGEFRAME_PYTHON" -m pybind11 --cmakedir 2>/dev/null)"; then
  cmake_args+=(-DEDGEFRAME_BUILD_PYTHON=ON "-Dpybind11_DIR=$pybind11_dir" "-DPython_EXECUTABLE=$EDGEFRAME_PYTHON")
fi
mkdir -p "$build_dir"
cmake -S "$repo" -B "$build_dir" "${cmake_args[@]}" "$@" > "$build_dir/configure.log" 2>&1 \
  || { cat "$build_dir/configure.log"; exit 1; }
grep -A14 "edgeframe .* configuration" "$build_dir/configure.log" || true
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}"
