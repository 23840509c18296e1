#!/usr/bin/env bash
# Dependency bootstrap for edgeframe: Debian packages, a Python venv with torch 2.11.0, a second
# venv with fairchem-core 2.24.0 (the reference for model v2; it pins its own torch), Kokkos 5.0.2
# and LAMMPS 4 Jul 2026 built from Debian's source tarballs, all cached in a fixed prefix outside
# the work tree (default /opt/edgeframe-deps, override EDGEFRAME_DEPS).
# Every step writes a stamp keyed by its versions and options and is skipped when the stamp
# exists, so a second run takes seconds.
#
# usage: scripts/bootstrap.sh [--gpu] [--no-lammps] [--no-fairchem] [--print-env]
#   --gpu          Kokkos + LAMMPS-KOKKOS with CUDA (Kokkos_ARCH_HOPPER90) instead of Serial+OpenMP
#   --no-lammps    stop after Kokkos and the venv (engine-only work)
#   --no-fairchem  do not make the fairchem venv (a present one is still named in the env file)
#   --print-env    only print the environment file path of the chosen variant
# env: EDGEFRAME_DEPS (prefix), EDGEFRAME_TARBALLS (folder searched for the source tarballs
#      before downloading; the GPU machine has no network), EDGEFRAME_PYTHON (use this
#      interpreter's torch instead of making a venv, e.g. on the GPU machine),
#      EDGEFRAME_FAIRCHEM_PYTHON (use this interpreter's fairchem-core 2.24.0 instead of making
#      the fairchem venv; the GPU machine, which has no network, gets no venv without it), JOBS.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
prefix="${EDGEFRAME_DEPS:-/opt/edgeframe-deps}"
jobs="${JOBS:-$(nproc)}"
variant=cpu
want_lammps=1
want_fairchem=1
print_env=0
for arg in "$@"; do
  case "$arg" in
    --gpu) variant=cuda-hopper90 ;;
    --no-lammps) want_lammps=0 ;;
    --no-fairchem) want_fairchem=0 ;;
    --print-env) print_env=1 ;;
    *) echo "bootstrap: unknown argument '$arg' (valid: --gpu --no-lammps --no-fairchem --print-env)" >&2; exit 2 ;;
  esac
done

kokkos_version=5.0.2
kokkos_tarball=kokkos_${kokkos_version}.orig.tar.gz
kokkos_sha256=188817bb452ca805ee8701f1c5adbbb4fb83dc8d1c50624566a18a719ba0fa5e
lammps_version=20260704
lammps_tarball=lammps_${lammps_version}+dfsg.orig.tar.gz
lammps_sha256=cddbc45a047416bd48a4a0b87f24a5b61b3446982b74d18cafe619c22b17eb62
torch_version=2.11.0
fairchem_version=2.24.0
fairchem_torch_version=2.13.0

kokkos_prefix="$prefix/kokkos-$kokkos_version-$variant"
lammps_prefix="$prefix/lammps-$lammps_version-$variant"
lammps_src="$prefix/lammps-$lammps_version-src"
venv="$prefix/venv-torch-$torch_version"
fairchem_venv="$prefix/venv-fairchem-$fairchem_version"
env_file="$prefix/env-$variant.sh"
if [[ $print_env == 1 ]]; then echo "$env_file"; exit 0; fi

mkdir -p "$prefix/stamps" "$prefix/downloads" "$prefix/build"
export CCACHE_DIR="${CCACHE_DIR:-$prefix/ccache}"
log() { printf '[bootstrap %(%H:%M:%S)T] %s\n' -1 "$*"; }
stamp_ok() { [[ -f "$prefix/stamps/$1" ]]; }
stamp_set() { date -u +%FT%TZ > "$prefix/stamps/$1"; }

# --- Debian packages ----------------------------------------------------------------------
apt_packages=(cmake ninja-build ccache g++ libopenmpi-dev openmpi-bin googletest libgtest-dev
              nlohmann-json3-dev python3-venv curl xz-utils)
install_apt() {
  if [[ $variant != cpu ]]; then
    # The GPU machine has a fixed image and no network: check the tools instead of installing.
    for tool in cmake ninja nvcc; do
      command -v "$tool" >/dev/null || { echo "bootstrap: '$tool' not found on this GPU machine" >&2; exit 1; }
    done
    log "GPU machine: cmake, ninja, nvcc present (apt-get skipped)"
    return
  fi
  local missing=()
  for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    log "apt-get install ${missing[*]}"
    local sudo=""; [[ $(id -u) == 0 ]] || sudo=sudo
    $sudo apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}" >/dev/null
  else
    log "Debian packages present"
  fi
}

# --- source tarballs from the Debian pool -------------------------------------------------
# The mirror is read from this machine's apt sources (never hard-coded): the first URI that
# serves the main archive (not debian-security).
debian_mirror() {
  local uri
  uri=$( { cat /etc/apt/sources.list 2>/dev/null; cat /etc/apt/sources.list.d/*.list 2>/dev/null; } \
         | awk '$1=="deb"{for(i=2;i<=NF;i++) if($i ~ /^(http|https|ftp):/){print $i; exit}}' \
         | grep -v security | head -n1 || true)
  if [[ -z "$uri" ]]; then
    uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null \
          | awk '/^URIs:/{for(i=2;i<=NF;i++) print $i}' | grep -v security | head -n1 || true)
  fi
  [[ -n "$uri" ]] || { echo "bootstrap: no Debian mirror found in /etc/apt/sources*" >&2; return 1; }
  echo "${uri%/}"
}

fetch_tarball() {  # name sha256 pool-path -> prints local path
  local name=$1 sha=$2 pool=$3 dest="$prefix/downloads/$1"
  if [[ ! -f "$dest" && -n "${EDGEFRAME_TARBALLS:-}" && -f "$EDGEFRAME_TARBALLS/$name" ]]; then
    cp "$EDGEFRAME_TARBALLS/$name" "$dest"
  fi
  if [[ ! -f "$dest" ]]; then
    local url; url="$(debian_mirror)/pool/main/$pool/$name"
    log "downloading $name from the Debian pool" >&2
    curl -fsSL --retry 3 -o "$dest.part" "$url" \
      || { echo "bootstrap: could not download $name from the Debian pool of the apt mirror" >&2; rm -f "$dest.part"; return 1; }
    mv "$dest.part" "$dest"
  fi
  local got; got=$(sha256sum "$dest" | cut -d' ' -f1)
  if [[ "$got" != "$sha" ]]; then
    echo "bootstrap: checksum mismatch for $name: expected $sha, got $got (file removed)" >&2
    rm -f "$dest"; return 1
  fi
  echo "$dest"
}

# --- Python venv with torch ---------------------------------------------------------------
setup_python() {
  if [[ -n "${EDGEFRAME_PYTHON:-}" ]]; then
    python_bin="$EDGEFRAME_PYTHON"
    "$python_bin" -c "import torch,sys; sys.exit(0 if torch.__version__.startswith('$torch_version') else 1)" \
      || { echo "bootstrap: $python_bin has no torch $torch_version" >&2; exit 1; }
    return
  fi
  python_bin="$venv/bin/python"
  local key="venv-$(sha256sum "$repo/tools/requirements.txt" | cut -c1-12)"
  if stamp_ok "$key"; then log "venv present ($venv)"; return; fi
  log "creating venv with torch $torch_version (about 4 GB of wheels)"
  [[ -x "$python_bin" ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$repo/tools/requirements.txt"
  stamp_set "$key"
}

# --- fairchem venv ------------------------------------------------------------------------
# fairchem-core pins torch ~= 2.13 while the engine compiles against LibTorch 2.11, so fairchem
# gets a venv of its own (DESIGN.md section 5), used by tools/fairchem_bridge and the tests that
# compare with fairchem. A venv already at the path is kept: pip only adds what it lacks (a no-op,
# ~20 s, when everything is there), then the import check below decides the stamp.
fairchem_ok() {
  "$1" -c "import sys, torch, fairchem.core, safetensors, pytest
sys.exit(0 if fairchem.core.__version__ == '$fairchem_version' and torch.__version__.startswith('$fairchem_torch_version') else 1)" \
    >/dev/null 2>&1
}
setup_fairchem() {
  fairchem_python=""
  if [[ -n "${EDGEFRAME_FAIRCHEM_PYTHON:-}" ]]; then
    fairchem_python="$EDGEFRAME_FAIRCHEM_PYTHON"
    fairchem_ok "$fairchem_python" \
      || { echo "bootstrap: $fairchem_python has no fairchem-core $fairchem_version with torch $fairchem_torch_version" >&2; exit 1; }
    return
  fi
  local req="$repo/tools/fairchem_bridge/requirements.txt"
  local key="venv-fairchem-$(sha256sum "$req" | cut -c1-12)"
  if stamp_ok "$key"; then log "fairchem venv present ($fairchem_venv)"; fairchem_python="$fairchem_venv/bin/python"; return; fi
  if [[ $want_fairchem == 0 ]]; then log "fairchem venv skipped (--no-fairchem)"; return; fi
  if [[ $variant != cpu ]]; then
    log "fairchem venv not made on the GPU machine (no network; set EDGEFRAME_FAIRCHEM_PYTHON)"
    return
  fi
  if [[ -x "$fairchem_venv/bin/python" ]]; then
    log "fairchem venv at $fairchem_venv: checking it against $req"
  else
    log "creating venv with fairchem-core $fairchem_version (about 6 GB installed)"
    python3 -m venv "$fairchem_venv"
  fi
  "$fairchem_venv/bin/pip" install -q -r "$req"
  fairchem_ok "$fairchem_venv/bin/python" \
    || { echo "bootstrap: $fairchem_venv does not import fairchem-core $fairchem_version with torch $fairchem_torch_version" >&2; exit 1; }
  stamp_set "$key"
  fairchem_python="$fairchem_venv/bin/python"
}

# --- Kokkos -------------------------------------------------------------------------------
build_kokkos() {
  local key="kokkos-$kokkos_version-$variant"
  if stamp_ok "$key"; then log "Kokkos $kokkos_version ($variant) present"; return; fi
  local tb; tb=$(fetch_tarball "$kokkos_tarball" "$kokkos_sha256" k/kokkos)
  local src="$prefix/build/kokkos-$kokkos_version-src" bld="$prefix/build/kokkos-$variant"
  rm -rf "$src" "$bld"; mkdir -p "$src"
  tar xzf "$tb" -C "$src" --strip-components=1
  local opts=(-DKokkos_ENABLE_SERIAL=ON)
  command -v ccache >/dev/null && opts+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if [[ $variant == cpu ]]; then
    opts+=(-DKokkos_ENABLE_OPENMP=ON)
  else
    opts+=(-DKokkos_ENABLE_CUDA=ON -DKokkos_ARCH_HOPPER90=ON -DKokkos_ENABLE_OPENMP=OFF
           "-DCMAKE_CXX_COMPILER=$src/bin/nvcc_wrapper")
  fi
  log "building Kokkos $kokkos_version ($variant)"
  cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=20 \
    -DBUILD_SHARED_LIBS=ON -DKokkos_ENABLE_IMPL_VIEW_LEGACY=ON \
    -DCMAKE_INSTALL_PREFIX="$kokkos_prefix" "${opts[@]}" >"$bld.log" 2>&1 \
    || { tail -30 "$bld.log"; exit 1; }
  cmake --build "$bld" -j "$jobs" >>"$bld.log" 2>&1 && cmake --install "$bld" >>"$bld.log" 2>&1 \
    || { tail -30 "$bld.log"; exit 1; }
  stamp_set "$key"
}

# --- LAMMPS -------------------------------------------------------------------------------
unpack_lammps() {
  local key="lammps-$lammps_version-src"
  if stamp_ok "$key"; then return; fi
  rm -rf "$lammps_src"; mkdir -p "$lammps_src"
  local trimmed="${EDGEFRAME_TARBALLS:-/nonexistent}/lammps-$lammps_version-trimmed.tar.xz"
  if [[ -f "$trimmed" ]]; then
    # Made by scripts/pack_for_device.sh from the verified Debian tarball (the GPU machine has
    # no network and a call carries at most 64 MiB); its own checksum travels beside it.
    (cd "$(dirname "$trimmed")" && sha256sum -c --quiet "$(basename "$trimmed").sha256") \
      || { echo "bootstrap: checksum mismatch for $trimmed" >&2; exit 1; }
    log "unpacking trimmed LAMMPS source into $lammps_src"
    tar xJf "$trimmed" -C "$lammps_src"
  else
    local tb; tb=$(fetch_tarball "$lammps_tarball" "$lammps_sha256" l/lammps)
    log "unpacking LAMMPS source into $lammps_src"
    # The tarball has no top directory. Docs, examples and benchmarks are not needed.
    tar xzf "$tb" -C "$lammps_src" --exclude=doc --exclude=bench
    tar xzf "$tb" -C "$lammps_src" doc/lammps.1 doc/msi2lmp.1   # installed man pages
  fi
  # LAMMPS' install step copies these folders; the trimmed GPU tree does not carry them.
  mkdir -p "$lammps_src/bench" "$lammps_src/potentials"
  # LAMMPS asks for Kokkos 5.1.0; 5.0.2 (Debian's) compiles and runs (DESIGN.md §5).
  sed -i 's/find_package(Kokkos 5.1.0 REQUIRED CONFIG)/find_package(Kokkos 5.0.2 REQUIRED CONFIG)/' \
    "$lammps_src/cmake/Modules/Packages/KOKKOS.cmake"
  grep -q 'find_package(Kokkos 5.0.2' "$lammps_src/cmake/Modules/Packages/KOKKOS.cmake" \
    || { echo "bootstrap: could not patch LAMMPS' Kokkos version request" >&2; exit 1; }
  stamp_set "$key"
}

build_lammps() {
  local key="lammps-$lammps_version-$variant"
  unpack_lammps    # the plugin compiles against LAMMPS' source tree, also when the build is present
  if stamp_ok "$key"; then log "LAMMPS $lammps_version ($variant) present"; return; fi
  local bld="$prefix/build/lammps-$variant"
  local opts=()
  # MPI where the machine has it (the CPU machines do; the GPU image may not: then LAMMPS'
  # serial STUBS library stands in and runs are single-rank).
  if command -v mpicxx >/dev/null; then opts+=(-DBUILD_MPI=ON); else opts+=(-DBUILD_MPI=OFF); fi
  command -v ccache >/dev/null && opts+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  if [[ $variant == cpu ]]; then
    opts+=(-DBUILD_OMP=ON)
  else
    opts+=("-DCMAKE_CXX_COMPILER=$kokkos_prefix/bin/nvcc_wrapper" -DBUILD_OMP=OFF)
  fi
  log "building LAMMPS $lammps_version ($variant): about 8 min on 2 cores from scratch"
  # An existing build folder is reused (ninja rebuilds only what changed, e.g. after a failed
  # install); a new LAMMPS version or variant gets its own folder through its name.
  cmake -S "$lammps_src/cmake" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_INSTALL_PREFIX="$lammps_prefix" -DBUILD_SHARED_LIBS=ON -DLAMMPS_INSTALL_RPATH=ON \
    -DPKG_KOKKOS=ON -DEXTERNAL_KOKKOS=ON -DKokkos_ROOT="$kokkos_prefix" \
    -DPKG_PLUGIN=ON -DPKG_MANYBODY=ON -DBUILD_TOOLS=OFF -DWITH_JPEG=OFF -DWITH_PNG=OFF \
    -DWITH_FFMPEG=OFF -DWITH_GZIP=OFF "${opts[@]}" \
    >"$bld.log" 2>&1 || { tail -40 "$bld.log"; exit 1; }
  cmake --build "$bld" -j "$jobs" >>"$bld.log" 2>&1 || { tail -40 "$bld.log"; exit 1; }
  cmake --install "$bld" >>"$bld.log" 2>&1 || { tail -40 "$bld.log"; exit 1; }
  stamp_set "$key"
}

write_env() {
  local torch_dir
  torch_dir=$("$python_bin" -c 'import torch,os; print(os.path.join(os.path.dirname(torch.__file__),"share","cmake","Torch"))')
  cat > "$env_file" <<ENV
# generated by scripts/bootstrap.sh: source it to find edgeframe's dependencies ($variant)
export EDGEFRAME_DEPS="$prefix"
export EDGEFRAME_VARIANT="$variant"
export EDGEFRAME_PYTHON="$python_bin"
export EDGEFRAME_FAIRCHEM_PYTHON="$fairchem_python"
export Kokkos_ROOT="$kokkos_prefix"
export Torch_DIR="$torch_dir"
export LAMMPS_ROOT="$lammps_prefix"
export LAMMPS_SOURCE_DIR="$lammps_src/src"
export LAMMPS_POTENTIALS="$lammps_src/potentials"
export CCACHE_DIR="$CCACHE_DIR"
export PATH="$lammps_prefix/bin:\$PATH"
export OMP_PROC_BIND=spread OMP_PLACES=threads
ENV
  log "environment: source $env_file"
}

SECONDS=0
install_apt
setup_python
setup_fairchem
build_kokkos
if [[ $want_lammps == 1 ]]; then build_lammps; else unpack_lammps; fi
write_env
log "done in ${SECONDS}s"
