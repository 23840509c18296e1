#!/usr/bin/env bash
# Runs every test: installs/builds what is missing (scripts/bootstrap.sh, cached), builds
# edgeframe, then ctest (GoogleTest units + LAMMPS-level tests, including model v2 against
# fairchem), pytest (reference model) and pytest in the fairchem venv (model v2's reference and
# converter against fairchem-core).
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
# The potential-file reader against truncated, bit-flipped and hostile files, again under
# AddressSanitizer + UBSan (its own small build: the reader links neither Kokkos nor torch).
echo "== ctest (potential reader under AddressSanitizer) =="
asan_dir="$build_dir-asan"
if cmake -S "$repo" -B "$asan_dir" -G Ninja -DEDGEFRAME_BUILD_PLUGIN=OFF -DEDGEFRAME_ENABLE_ASAN=ON \
     -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$build_dir/asan-configure.log" 2>&1 \
   && cmake --build "$asan_dir" --target edgeframe_format_tests -j "${JOBS:-$(nproc)}" > "$build_dir/asan-build.log" 2>&1; then
  (cd "$asan_dir" && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -R '^Potential' --timeout 600) || status=1
else
  echo "test.sh: the AddressSanitizer build failed (see $build_dir/asan-*.log)"; status=1
fi
if [[ -d "$repo/tests/python" ]]; then
  echo "== pytest (PyTorch reference model) =="
  (cd "$repo" && "$EDGEFRAME_PYTHON" -m pytest -q tests/python) || status=1
fi
# Model v2's reference and converter against fairchem itself, in fairchem's own venv (bootstrap.sh).
echo "== pytest (model v2 against fairchem-core, in its venv) =="
if [[ -x "${EDGEFRAME_FAIRCHEM_PYTHON:-}" ]]; then
  (cd "$repo" && "$EDGEFRAME_FAIRCHEM_PYTHON" -m pytest -q -p no:cacheprovider tests/fairchem) || status=1
else
  echo "test.sh: EDGEFRAME_FAIRCHEM_PYTHON is not set or not executable (scripts/bootstrap.sh makes the venv)"
  status=1
fi
exit $status
