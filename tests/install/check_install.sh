#!/usr/bin/env bash
# cmake --install of a finished build into a fresh prefix, then what a user of that prefix does:
# a separate CMake project (tests/install/consumer) finds the package with
# find_package(edgeframe 0.1 CONFIG), links edgeframe::engine and reads a potential file, and
# LAMMPS loads the installed plugin. ctest: install_and_find_package (LABELS install).
# usage: tests/install/check_install.sh <build-dir> <source-dir>
# env (default: the build's CMakeCache.txt): Kokkos_DIR, Torch_DIR, CXX, EDGEFRAME_LMP ("" skips LAMMPS)
set -euo pipefail
build="$(cd "${1:?usage: check_install.sh <build-dir> <source-dir>}" && pwd)"
src="$(cd "${2:?usage: check_install.sh <build-dir> <source-dir>}" && pwd)"

cache() {  # value of a CMakeCache.txt entry of the build, empty if absent
  sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n1
}
Kokkos_DIR="${Kokkos_DIR:-$(cache Kokkos_DIR)}"
Torch_DIR="${Torch_DIR:-$(cache Torch_DIR)}"
CXX="${CXX:-$(cache CMAKE_CXX_COMPILER)}"
libdir="$(cache CMAKE_INSTALL_LIBDIR)"
if [[ -z "${EDGEFRAME_LMP+set}" && "$(cache EDGEFRAME_BUILD_PLUGIN)" == ON ]]; then
  EDGEFRAME_LMP="$(cache EDGEFRAME_LMP)"
fi
: "${libdir:?no CMAKE_INSTALL_LIBDIR in $build/CMakeCache.txt}"

work="$build/tests/install_check"   # kept after a failure, for a look; replaced on the next run
rm -rf "$work"
mkdir -p "$work"
prefix="$work/prefix"
fail() { echo "FAIL: $*" >&2; exit 1; }

echo "== cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "cmake --install"; }

for f in "$libdir/cmake/edgeframe/edgeframeConfig.cmake" "$libdir/cmake/edgeframe/edgeframeConfigVersion.cmake" \
         "$libdir/cmake/edgeframe/edgeframeTargets.cmake" "$libdir/cmake/edgeframe/EdgeframeTorch.cmake" \
         "$libdir/libedgeframe_engine.a" "$libdir/libedgeframe_format.a" \
         include/edgeframe/potential.hpp include/edgeframe/evaluator.hpp include/edgeframe/graph.hpp; do
  [[ -f "$prefix/$f" ]] || fail "not installed: $prefix/$f"
done
# Every header of the engine and of the kernels, flat.
for h in "$src"/src/engine/*.hpp "$src"/kokkos/*.hpp; do
  [[ -f "$prefix/include/edgeframe/$(basename "$h")" ]] || fail "header not installed: $(basename "$h")"
done
plugin="$prefix/$libdir/edgeframe/edgeframeplugin.so"
if [[ -n "${EDGEFRAME_LMP:-}" ]]; then
  [[ -f "$plugin" ]] || fail "plugin not installed: $plugin"
  if readelf -d "$plugin" | grep -E "R(UN)?PATH" | grep -qF "$build"; then
    fail "the installed plugin's RUNPATH names the build tree: $(readelf -d "$plugin" | grep -E 'R(UN)?PATH')"
  fi
fi
# No path into the source or build tree may survive in the installed package.
if grep -rlF -e "$src/" -e "$build/" "$prefix/$libdir/cmake/edgeframe"; then
  fail "the installed CMake files above name the source or build tree"
fi
echo "installed: $(cd "$prefix" && find . -type f | wc -l) files"

echo "== consumer project: find_package(edgeframe 0.1 CONFIG), edgeframe::engine"
cmake -S "$src/tests/install/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_CXX_COMPILER="$CXX" -DEDGEFRAME_PREFIX="$prefix" \
      -DKokkos_DIR="$Kokkos_DIR" -DTorch_DIR="$Torch_DIR" > "$work/consumer-configure.log" 2>&1 \
  || { cat "$work/consumer-configure.log"; fail "consumer configure"; }
grep "edgeframe .* from" "$work/consumer-configure.log"
cmake --build "$work/consumer" -j 1 > "$work/consumer-build.log" 2>&1 \
  || { cat "$work/consumer-build.log"; fail "consumer build"; }

model="$src/tests/data/goldens/model_L2m1.safetensors"
out="$("$work/consumer/consumer" "$model")" || { echo "$out"; fail "consumer run"; }
echo "$out"
# What the file holds, read independently (safetensors: u64 header size, JSON header, the
# model config as JSON under __metadata__.edgeframe).
expected="$(python3 - "$model" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
meta = json.loads(json.loads(raw[8:8 + n])["__metadata__"]["edgeframe"])
print("elements: " + " ".join(meta["species"]))
print("lmax: %d" % meta["model"]["lmax"])
PY
)"
while IFS= read -r line; do
  grep -qxF "$line" <<< "$out" || fail "consumer output lacks '$line'"
done <<< "$expected"

if [[ -n "${EDGEFRAME_LMP:-}" ]]; then
  echo "== $EDGEFRAME_LMP: plugin load $plugin"
  cat > "$work/in.plugin" <<IN
plugin load $plugin
plugin list
units metal
lattice diamond 3.567
region box block 0 1 0 1 0 1
create_box 1 box
pair_style edgeframe
IN
  (cd "$work" && OMP_NUM_THREADS=1 "$EDGEFRAME_LMP" -nocite -log none -in in.plugin > lmp.out 2>&1) \
    || { cat "$work/lmp.out"; fail "lmp with the installed plugin"; }
  grep -i "loading plugin" "$work/lmp.out" || true
  grep -q "pair style plugin edgeframe" "$work/lmp.out" || { cat "$work/lmp.out"; fail "the plugin registered no pair style edgeframe"; }
  echo "== LAMMPS_PLUGIN_PATH=$(dirname "$plugin") $EDGEFRAME_LMP (no plugin load)"
  sed 1d "$work/in.plugin" > "$work/in.plugin-path"
  (cd "$work" && OMP_NUM_THREADS=1 LAMMPS_PLUGIN_PATH="$(dirname "$plugin")" "$EDGEFRAME_LMP" -nocite -log none \
                  -in in.plugin-path > lmp-path.out 2>&1) \
    || { cat "$work/lmp-path.out"; fail "lmp with LAMMPS_PLUGIN_PATH"; }
  grep -i "loaded .* plugins from" "$work/lmp-path.out" || true
  grep -q "pair style plugin edgeframe" "$work/lmp-path.out" \
    || { cat "$work/lmp-path.out"; fail "LAMMPS_PLUGIN_PATH did not load the installed plugin"; }
else
  echo "== no plugin in this build (EDGEFRAME_BUILD_PLUGIN=OFF): LAMMPS step skipped"
fi
echo "PASS: installed package found and used, plugin loaded"
