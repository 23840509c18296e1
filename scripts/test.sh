#!/usr/bin/env bash
# Runs every test: installs/builds what is missing (scripts/bootstrap.sh, cached), builds
# edgeframe, then ctest (GoogleTest units + LAMMPS-level tests) and pytest (reference model).
# This is the README's test command and what .ci/run calls.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_dir="${EDGEFRAME_BUILD_DIR:-$repo/build}"
export EDGEFRAME_BUILD_DIR="$build_dir"
"$repo/scripts/build.sh" || { echo "test.sh: build failed"; exit 1; }
# shellcheck disable=SC1090
source "$("$repo/scripts/bootstrap.sh" --print-env)"

status=0
echo "== ctest (GoogleTest units, LAMMPS-level tests) =="
(cd "$build_dir" && ctest --output-on-failure --timeout 1800) || status=1
if [[ -d "$repo/tests/python" ]]; then
  echo "== pytest (PyTorch reference model) =="
  (cd "$repo" && "$EDGEFRAME_PYTHON" -m pytest -q tests/python) || status=1
fi
exit $status
