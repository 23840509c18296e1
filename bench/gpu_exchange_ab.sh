#!/usr/bin/env bash
# Exchange variants side by side on two GPUs (issue #8), one table: each variant runs
# bench/gpu_scaling.sh's 2-GPU cases (strong at 32 768 and 110 592 atoms, weak 65 536) with its
# pair_style keywords (SCALING_EXCHANGE), in one call, after one 1-GPU baseline per size. Variants (default all):
#   lammps   - LAMMPS' swaps (self swaps skipped), the measured default of 2026-11-30e
#   direct   - exchange_swaps direct (the exchange's own MPI swaps from pinned buffers)
#   pe8      - LAMMPS' swaps, each rank bound to 8 cores, 8 threads for the host copies
#   ipc      - direct swaps over CUDA IPC (exchange_transport cuda-ipc: device to device)
# usage (from scripts/gpu_session.sh's environment, or with lmp and the plugin on PATH):
#   bench/gpu_exchange_ab.sh OUTDIR [steps] [variants...]
# OpenMPI settings: SCALING_MPI_ENV (a file to source, e.g. the mpi step's mpi-best.env).
# SCALING_ON_CPU=1 tries the script on a CPU build (tiny boxes: reps 2 and 3). That only checks
# the script: on CPU builds edgeframe/kk takes LAMMPS-KOKKOS' device communication, so neither
# the staged exchange nor the direct swaps run there (tests/lammps cover those on the CPU).
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=${1:?usage: bench/gpu_exchange_ab.sh OUTDIR [steps] [variants...]}; shift
steps=${1:-10}; shift $(( $# > 0 ? 1 : 0 ))
variants=("$@"); [[ ${#variants[@]} -gt 0 ]] || variants=(lammps direct pe8)
reps=(16 24); [[ -n ${SCALING_ON_CPU:-} ]] && reps=(2 3)
mkdir -p "$out"
# shellcheck disable=SC1090
[[ -n ${SCALING_MPI_ENV:-} ]] && source "$SCALING_MPI_ENV"
status=0
one() {    # variant dir cases: one gpu_scaling.sh run with the variant's pair_style keywords
  local v=$1 dir=$2 cases=$3
  local env=("SCALING_EXCHANGE=exchange_swaps lammps")
  case $v in
    lammps) ;;
    direct) env=("SCALING_EXCHANGE=exchange_swaps direct") ;;
    pe8) env=("SCALING_EXCHANGE=exchange_swaps lammps exchange_threads 8" "SCALING_MPIRUN_ARGS=--map-by slot:PE=8 --report-bindings") ;;
    ipc) env=("SCALING_EXCHANGE=exchange_swaps direct exchange_transport cuda-ipc") ;;
    baseline) ;;
    *) echo "gpu_exchange_ab: unknown variant '$v' (valid: lammps direct pe8 ipc)"; return 2 ;;
  esac
  env "${env[@]}" SCALING_CASES="$cases" "$repo/bench/gpu_scaling.sh" "$dir" "$steps" "${reps[@]}" | grep -E "^\| (strong|weak)"
}
echo "| variant | case | GPUs (ranks) | atoms | ms/step | atom-steps/s | edges per rank (mean / max) | |"
echo "|---|---|---|---|---|---|---|---|"
one baseline "$out/baseline" '^strong-r[0-9]+-1gpu$' | sed 's/^/| 1 GPU /' || status=1
for v in "${variants[@]}"; do
  one "$v" "$out/$v" '^(strong-r[0-9]+|weak-r[0-9]+)-2gpu$' | sed "s/^/| $v /" || status=1
done
# Each variant's exchange split, from its logs.
for v in "${variants[@]}"; do
  for f in "$out/$v"/log.*; do
    [[ $f == *.stdout || ! -f $f ]] && continue
    echo "$v ${f##*/log.}: $(grep -h 'edgeframe exchange split' "$f" | sed 's/.*exchanges on rank 0): //')"
    echo "$v ${f##*/log.} per force call after the first (ms): $(grep -h 'timing detail per force call after the first' "$f" | sed 's/.*over ranks): //')"
    grep -h "edgeframe: direct swaps over CUDA IPC\|cuda-ipc not possible" "$f" | sed "s/^/$v ${f##*/log.}: /"
  done
done
exit $status
