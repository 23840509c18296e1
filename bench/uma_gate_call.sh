#!/usr/bin/env bash
# The UMA gate (bench/uma_gate.sh) as one device call: what every gate call needs around the gate
# itself, in one tracked place (bench/gpu-session.md, "The UMA gate in one call").
#   1. fairchem from the carried wheels into /tmp/fcpkgs (.device/fairchem-wheels/INSTALL.sh);
#      with Nitro's sm90 path asked for and nvidia-cutlass-dsl's parts present in CUTLASS_PARTS
#      (default /tmp/cutlass-parts, carried over several calls, scripts/pack_cutlass_dsl.sh), that
#      too; PYTHONPATH for both.
#   2. The GPU environment of scripts/bootstrap.sh, and LAMMPS' lib/, bin/ and include/ where the
#      device's dependency prefix has a LAMMPS build (the LAMMPS columns need lmp and the plugin).
#   3. bench/uma_gate.sh with the call's time shared: FAIRCHEM_SHARE % of what is left for
#      fairchem's paths (default 55), EDGEFRAME_SHARE % for edgeframe's columns (default 35).
#   4. gate.md, gate.json, fairchem.jsonl, uma-gate.out and the logs (no inputs or forces) in
#      /tmp/uma-gate-call/r, packed into OUT/results.tar.xz (the tool returns at most 8 files).
# UMA_GATE_PATHS, UMA_GATE_PRECISIONS and UMA_GATE_LAMMPS_TAGS pass through to bench/uma_gate.sh
# (which documents them). CALL_LIMIT (seconds, default 565) bounds the whole call.
#   run from the repository root on the device: OUT=$OUT bash bench/uma_gate_call.sh
set -u
T0=$SECONDS
: "${OUT:?set OUT}"
R=/tmp/uma-gate-call/r
rm -rf "$R"; mkdir -p "$R"
pack() { tar -C /tmp/uma-gate-call -cJf "$OUT/results.tar.xz" r; }

if [[ ! -d /tmp/fcpkgs/fairchem ]]; then
  bash .device/fairchem-wheels/INSTALL.sh /tmp/fcpkgs > "$R/install.log" 2>&1
  echo "fairchem install rc $?"
fi
export PYTHONPATH=/tmp/fcpkgs
parts=${CUTLASS_PARTS:-/tmp/cutlass-parts}
paths=",${UMA_GATE_PATHS:-nitro},"  # bench/uma_gate.sh's default list names nitro
if [[ $paths == *,nitro,* && -d $parts ]]; then
  [[ -d /tmp/fcpkgs/nvidia_cutlass_dsl ]] || bash .device/cutlass-dsl/INSTALL.sh "$parts" /tmp/fcpkgs >> "$R/install.log" 2>&1
  echo "cutlass install rc $?"
  export PYTHONPATH=/tmp/fcpkgs:/tmp/fcpkgs/nvidia_cutlass_dsl/dsl_packages
fi

# shellcheck disable=SC1090
source "$(scripts/bootstrap.sh --gpu --no-lammps --print-env)"
if [[ -n ${LAMMPS_ROOT:-} && -x $LAMMPS_ROOT/bin/lmp ]]; then
  export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:${LD_LIBRARY_PATH:-}" PATH="$LAMMPS_ROOT/bin:$PATH"
  mkdir -p "$LAMMPS_ROOT/include"  # LAMMPS' CMake config names it (as scripts/gpu_session.sh)
else
  export UMA_GATE_LAMMPS_TAGS=""  # no lmp on this machine: no LAMMPS column
  echo "no LAMMPS build on this machine: the gate runs without its LAMMPS columns"
fi
export LD_LIBRARY_PATH="$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"

left=$((${CALL_LIMIT:-565} - (SECONDS - T0)))
TIME_LEFT=$((left * ${EDGEFRAME_SHARE:-35} / 100)) FAIRCHEM_BUDGET=$((left * ${FAIRCHEM_SHARE:-55} / 100)) \
  timeout $((left - 5)) bash bench/uma_gate.sh /tmp/uma-gate > "$R/uma-gate.out" 2>&1
echo "uma_gate rc $? at $((SECONDS - T0)) s"
cp /tmp/uma-gate/gate.md /tmp/uma-gate/gate.json /tmp/uma-gate/fairchem.jsonl "$R/" 2>/dev/null
tar -C /tmp/uma-gate --exclude='*.case' --exclude='*.data' --exclude='*.safetensors' --exclude='*.pt' \
  --exclude='*.dump' --exclude='*.f8' --exclude='*.npz' -cJf "$R/uma-gate-logs.tar.xz" fairchem.log edgeframe.log edgeframe \
  2> /dev/null
cat "$R/uma-gate.out"
pack
echo "total $((SECONDS - T0)) s"
