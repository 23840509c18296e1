#!/usr/bin/env bash
# Packs the wheels that the GPU machine (no network; Python 3.12, torch 2.11.0+cu130, Triton 3.6)
# needs to run fairchem-core 2.24.0 into .device/fairchem-wheels/ (git-ignored, carried with
# `.device`), and writes the folder's INSTALL.sh (bench/gpu-session.md, "fairchem on the device").
#
#   scripts/pack_fairchem_wheels.sh [DIR]          # DIR: default .device/fairchem-wheels
#
# Each wheel is one pinned version, fetched without its dependencies for CPython 3.12 on
# manylinux x86-64; a wheel already in DIR is kept. antlr4-python3-runtime 4.9.3 has no wheel:
# it is built here from its sdist (`pip wheel --no-deps`; pure Python, tag py3-none-any). The set
# is fairchem's requirements minus what the machine's image already holds (KINDS.md's list) and
# minus what predict does not import: wandb (fairchem.core.common.logger imports it at module
# level, only its WandBLogger uses it: INSTALL.sh writes a stub module instead),
# nvalchemi-toolkit-ops and warp-lang (guarded imports; graph generation version 3 only),
# nvidia-cutlass-dsl (about 240 MB; only UMA Nitro's sm90 CuTe kernels import it; scripts/pack_cutlass_dsl.sh packs it apart), cuda-python
# (a meta package; cuda-bindings is on the machine), ase-db-backends, websockets. lmdb, orjson
# (cp312 builds), clusterscope and ruamel_yaml are not imported at predict time either; they are
# small and fairchem (ruamel_yaml: monty) requires them. setuptools 80.10.2 (fairchem requires
# <81) goes to optional/: INSTALL.sh installs it only where the machine's setuptools has no
# pkg_resources (torchtnt imports it; setuptools 82 removed it).
#
# On the GPU machine: `bash .device/fairchem-wheels/INSTALL.sh [TARGET]` (default /tmp/fcpkgs)
# installs them with `pip install --no-index --no-deps --target TARGET`; then PYTHONPATH=TARGET.
# PYTHON (default python3) names the interpreter whose pip downloads here and installs there.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/.device/fairchem-wheels}"
py="${PYTHON:-python3}"
mkdir -p "$out/optional"

wheels=(fairchem_core==2.24.0 ase==3.29.0 hydra_core==1.3.8 omegaconf==2.3.1 backoff==2.2.1
        monty==2026.10.21 ruamel_yaml==0.19.1 submitit==1.5.4 torchtnt==0.2.4 clusterscope==0.0.18
        lmdb==1.7.3 orjson==3.13.0)
target_flags=(--only-binary=:all: --python-version 3.12 --implementation cp
              --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
              --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
              --platform manylinux1_x86_64)

# have DIR NAME VERSION: is a wheel of NAME (normalized: lower case, '_' for '-' and '.') there?
have() {
  local f
  shopt -s nullglob nocaseglob
  f=("$1/$2-$3-"*.whl)
  shopt -u nullglob nocaseglob
  ((${#f[@]} > 0))
}

fetch() {  # fetch DIR NAME==VERSION
  local dir="$1" spec="$2" name="${2%%==*}" version="${2##*==}"
  if have "$dir" "$name" "$version"; then echo "have   $spec"; return; fi
  echo "fetch  $spec"
  "$py" -m pip download -q --no-deps "${target_flags[@]}" -d "$dir" "$spec"
  have "$dir" "$name" "$version" || { echo "pack_fairchem_wheels: no wheel $name-$version in $dir" >&2; exit 1; }
}

for spec in "${wheels[@]}"; do fetch "$out" "$spec"; done
fetch "$out/optional" setuptools==80.10.2

if have "$out" antlr4_python3_runtime 4.9.3; then
  echo "have   antlr4_python3_runtime==4.9.3"
else
  echo "build  antlr4_python3_runtime==4.9.3 (from its sdist)"
  "$py" -m pip wheel -q --no-deps --no-binary=antlr4-python3-runtime -w "$out" antlr4-python3-runtime==4.9.3
  have "$out" antlr4_python3_runtime 4.9.3 || { echo "pack_fairchem_wheels: antlr4 wheel not built" >&2; exit 1; }
fi

cat > "$out/INSTALL.sh" <<'INSTALL'
#!/usr/bin/env bash
# Installs fairchem-core 2.24.0 and what it needs beyond the GPU machine's packages from the
# wheels beside this file into TARGET (default /tmp/fcpkgs); then `export PYTHONPATH=TARGET`.
# Written by scripts/pack_fairchem_wheels.sh (bench/gpu-session.md, "fairchem on the device").
#
#   bash .device/fairchem-wheels/INSTALL.sh [TARGET]        # PYTHON: default python3
#
# optional/setuptools-80.10.2 is installed only where the interpreter's own setuptools has no
# pkg_resources (torchtnt imports it). wandb is not carried: fairchem.core.common.logger imports
# it at module level, so a stub module `wandb` is written into TARGET (any use of it raises).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
target="${1:-/tmp/fcpkgs}"
py="${PYTHON:-python3}"
mkdir -p "$target"
wheels=("$here"/*.whl)
if env -u PYTHONPATH "$py" -c 'import pkg_resources' >/dev/null 2>&1; then
  echo "INSTALL: the interpreter's setuptools has pkg_resources; optional/ not installed"
else
  echo "INSTALL: the interpreter's setuptools has no pkg_resources; installing optional/setuptools"
  wheels+=("$here"/optional/setuptools-*.whl)
fi
PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --disable-pip-version-check \
  --target "$target" "${wheels[@]}"
mkdir -p "$target/wandb"
cat > "$target/wandb/__init__.py" <<'STUB'
"""Stub of wandb written by .device/fairchem-wheels/INSTALL.sh (wandb is not carried).

fairchem.core.common.logger imports wandb at module level and uses it only in its WandBLogger,
which predicting never makes. Any use of this module raises.
"""

__version__ = "0.0.0+stub"
run = None


def _absent(*args, **kwargs):
    raise RuntimeError("wandb is a stub here (INSTALL.sh): wandb logging is not available")


init = log = watch = finish = mark_preempting = _absent


def __getattr__(name):
    raise AttributeError(f"module 'wandb' is a stub (INSTALL.sh): no attribute {name!r}")
STUB
echo "INSTALL: done: export PYTHONPATH=$target"
INSTALL
chmod +x "$out/INSTALL.sh"

(cd "$out" && find . -type f | sort | sed 's|^\./|  |')
echo "$(du -sh "$out" | cut -f1) in $out"
