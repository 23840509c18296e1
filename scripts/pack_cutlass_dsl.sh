#!/usr/bin/env bash
# Packs nvidia-cutlass-dsl 4.7.1 (the version fairchem-core 2.24.0 pins; UMA Nitro's sm90 path
# imports its `cutlass.cute`) for the GPU machine, which has no network, into parts small enough
# to travel one per device call (bench/gpu-session.md, "UMA Nitro's sm90 path").
#
#   scripts/pack_cutlass_dsl.sh [DIR]         # DIR: default .device/cutlass-dsl (git-ignored)
#
# The registries do provide the module: the meta wheel nvidia-cutlass-dsl holds only a .pth file
# that puts nvidia_cutlass_dsl/dsl_packages on sys.path, and the package `cutlass` itself is in
# nvidia-cutlass-dsl-libs-base, its compiler library in nvidia-cutlass-dsl-libs-cu13 (88 MB
# compressed, 193 MB installed). An install with `pip --target` on PYTHONPATH never reads .pth
# files, so there `cutlass` is missing unless dsl_packages is put on PYTHONPATH too: INSTALL.sh
# prints that line.
#
# The five wheels (meta, libs-core, libs-base, libs-cu13, nvidia-cuda-nvdisasm 13.x, which
# libs-base requires) are unpacked into one tree (a wheel is a zip of its installed files; none of
# these has scripts), packed with xz -9 (about 65 MiB, a few minutes on two cores) and split into
# parts of PART_MB (default 16) MiB: DIR/part.aa, part.ab, ... Every device call carries the
# working tree (about 45 MB) too, within 64 MiB, so each part travels in its own call and is
# copied to /tmp/cutlass-parts/ there while the machine stays warm; then
#
#   bash .device/cutlass-dsl/INSTALL.sh /tmp/cutlass-parts /tmp/fcpkgs
#
# joins and unpacks them into TARGET and prints the PYTHONPATH to export. Other settings:
# PYTHON_VERSION (default 3.12, the GPU machine's), CUDA_LIBS (default cu13; cu12 also exists).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$repo/.device/cutlass-dsl}"
py="${PYTHON:-python3}"
pyver="${PYTHON_VERSION:-3.12}"
cuda_libs="${CUDA_LIBS:-cu13}"
part_mb="${PART_MB:-16}"
version=4.7.1
mkdir -p "$out/wheels"

flags=(--no-deps --only-binary=:all: --python-version "$pyver" --implementation cp
       --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
       --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
for spec in "nvidia-cutlass-dsl==$version" "nvidia-cutlass-dsl-libs-core==$version" \
            "nvidia-cutlass-dsl-libs-base==$version" "nvidia-cutlass-dsl-libs-$cuda_libs==$version" \
            "nvidia-cuda-nvdisasm>=13.3,<14"; do
  echo "fetch  $spec"
  "$py" -m pip download -q "${flags[@]}" -d "$out/wheels" "$spec"
done

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
for w in "$out"/wheels/*.whl; do unzip -q -o "$w" -d "$stage/site"; done
[[ -f $stage/site/nvidia_cutlass_dsl/dsl_packages/cutlass/cute/__init__.py ]] ||
  { echo "pack_cutlass_dsl: the wheels hold no nvidia_cutlass_dsl/dsl_packages/cutlass/cute" >&2; exit 1; }
echo "pack   $(du -sh "$stage/site" | cut -f1) unpacked; xz -9 (a few minutes)"
rm -f "$out"/part.*
tar -C "$stage/site" -cf - . | xz -9 -T2 | split -b "${part_mb}M" - "$out/part."
(cd "$out" && sha256sum part.* > parts.sha256)

cat > "$out/INSTALL.sh" <<'INSTALL'
#!/usr/bin/env bash
# Joins the parts of nvidia-cutlass-dsl (written by scripts/pack_cutlass_dsl.sh) found in
# PARTS_DIR, checks them against parts.sha256 beside this file, unpacks them into TARGET and
# prints the PYTHONPATH to export: TARGET and TARGET/nvidia_cutlass_dsl/dsl_packages (what the
# wheel's .pth file adds in a normal install; PYTHONPATH installs never read .pth files).
#
#   bash .device/cutlass-dsl/INSTALL.sh PARTS_DIR [TARGET]     # TARGET: default /tmp/fcpkgs
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
parts="${1:?usage: INSTALL.sh PARTS_DIR [TARGET]}"
target="${2:-/tmp/fcpkgs}"
(cd "$parts" && sha256sum -c --quiet "$here/parts.sha256") ||
  { echo "INSTALL: parts in $parts missing or damaged (need every file of parts.sha256)" >&2; exit 1; }
mkdir -p "$target"
cat "$parts"/part.* | xz -d | tar -C "$target" -xf -
echo "INSTALL: done: export PYTHONPATH=$target:$target/nvidia_cutlass_dsl/dsl_packages"
INSTALL
chmod +x "$out/INSTALL.sh"
echo "wrote  $out: $(ls "$out"/part.* | wc -l) parts of at most $part_mb MiB, INSTALL.sh, parts.sha256"
ls -l "$out"/part.*
