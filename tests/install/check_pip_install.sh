#!/usr/bin/env bash
# pip install . of the repository (pyproject.toml, scikit-build-core) into a fresh venv that sees
# the build's Python packages (torch, numpy, ase, pybind11, scikit-build-core of EDGEFRAME_PYTHON's
# venv), then what a user does: import edgeframe outside the source tree and
# get the same energy and forces as the build tree's module. ctest: python_pip_install.
# usage: tests/install/check_pip_install.sh <build-dir> <source-dir> <python>
# env: Kokkos_DIR, Torch_DIR (the build's), CXX
set -euo pipefail
build="$(cd "${1:?usage}" && pwd)"
src="$(cd "${2:?usage}" && pwd)"
python="${3:?usage}"
work="$build/tests/pip_install_check"    # kept after a failure, for a look; replaced on the next run
rm -rf "$work"
mkdir -p "$work"
"$python" -m venv "$work/venv"
# The build's venv packages, seen from the new venv through a .pth file (a venv made from a venv
# gets the base interpreter's site-packages with --system-site-packages, not the venv's).
base_site="$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
new_site="$("$work/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
echo "$base_site" > "$new_site/edgeframe-build-venv.pth"
echo "== pip install $src (scikit-build-core; build dir $work/build)"
# No build isolation: the build needs the torch that the engine links (not a fresh one from PyPI).
CMAKE_ARGS="-DKokkos_DIR=$Kokkos_DIR -DTorch_DIR=$Torch_DIR -DCMAKE_CXX_COMPILER=$CXX -G Ninja" \
  "$work/venv/bin/pip" install -q --no-build-isolation --no-deps \
  --config-settings=build-dir="$work/build" "$src" > "$work/pip.log" 2>&1 \
  || { tail -40 "$work/pip.log"; echo "FAIL: pip install"; exit 1; }
cd "$work"
"$work/venv/bin/python" - "$src" "$build/python" <<'PY'
import sys, pathlib, importlib
src, build_python = sys.argv[1], sys.argv[2]
import numpy as np
import ase
import edgeframe
where = pathlib.Path(edgeframe.__file__).resolve()
assert "site-packages" in str(where), f"edgeframe imported from {where}, not the installed package"
model = pathlib.Path(src) / "tests" / "data" / "goldens" / "model_L2m1.safetensors"
atoms = ase.Atoms("C8", scaled_positions=[[0, 0, 0], [.25, .25, .25], [.5, .5, 0], [.75, .75, .25],
                                          [.5, 0, .5], [.75, .25, .75], [0, .5, .5], [.25, .75, .75]],
                  cell=[3.567] * 3, pbc=True)
atoms.rattle(0.05, seed=1)
atoms.calc = edgeframe.Calculator(model)
e, f = atoms.get_potential_energy(), atoms.get_forces()
# The build tree's module on the same atoms: the same engine, the same numbers.
sys.path.insert(0, build_python)
for name in [m for m in sys.modules if m == "edgeframe" or m.startswith("edgeframe.")]:
    del sys.modules[name]
built = importlib.import_module("edgeframe")
assert pathlib.Path(built.__file__).resolve() != where
ref = atoms.copy()
ref.calc = built.Calculator(model)
assert e == ref.get_potential_energy() and np.array_equal(f, ref.get_forces()), (e, ref.get_potential_energy())
print(f"installed edgeframe {edgeframe.version()} at {where.parent}: energy {e:.12f} eV, equal to the build tree's")
PY
echo "PASS: pip install . and import edgeframe"
