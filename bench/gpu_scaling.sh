#!/usr/bin/env bash
# One GPU vs two (issue #8, doc/performance.md "Two H200s: scaling"): diamond with the shipped carbon
# potential (bench/in.ghost_modes, fp32, per-layer exchange), LAMMPS-KOKKOS on CUDA.
#   strong scaling: the same box on 1 and on 2 GPUs (mpirun -np 2, -k on g 2)
#   weak scaling:   a box of twice the atoms on 2 GPUs against the base box on 1
# usage (on a machine with two GPUs, build from scripts/gpu_session.sh):
#   bench/gpu_scaling.sh OUTDIR [steps] [reps...]      (default: 20 steps, reps 16 24)
#   SCALING_CASES=REGEX runs only the cases whose names match (e.g. '^strong-r24-2gpu$').
#   SCALING_MPIRUN_ARGS="..." adds mpirun options (e.g. "--map-by slot:PE=8 --report-bindings").
#   SCALING_EXCHANGE="..." adds pair_style keywords (e.g. "exchange_swaps direct").
# SCALING_ON_CPU=1 runs the same commands with Kokkos OpenMP (to try the script without GPUs).
# reps r gives 8 r^3 atoms (16: 32 768, 24: 110 592); the weak case stacks 2 r cells along z.
# One rank on one GPU runs edgeframe/kk's device-resident path; two ranks run the host-data path
# with per-layer exchange (doc/pair_style.md), so the 1-rank row with fold_images no (the same
# host-data path, periodic images as ghosts) is printed too: it separates path from scaling. Since the
# 2026-11-30 measurements that 1-rank row takes LAMMPS-KOKKOS' device communication (one rank keeps pair
# communication on the device) while the 2-rank rows stage through the host (no CUDA-aware MPI);
# SCALING_EXCHANGE="device_comm no" gives it the staged path of those measurements.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=${1:?usage: bench/gpu_scaling.sh OUTDIR [steps] [reps...]}; shift
steps=${1:-20}; shift $(( $# > 0 ? 1 : 0 ))
reps_list=("$@"); [[ ${#reps_list[@]} -gt 0 ]] || reps_list=(16 24)
plugin=${EDGEFRAME_PLUGIN:-$repo/build-gpu/src/lammps/edgeframeplugin.so}
mkdir -p "$out" && out=$(cd "$out" && pwd)    # absolute: the runs below start in the repository root
failed=0
export OMP_NUM_THREADS=1
cd "$repo"

run() {    # name ranks reps zreps fold
  local name=$1 np=$2 reps=$3 zreps=$4 fold=$5 log="$out/log.$1"
  [[ $name =~ ${SCALING_CASES:-.} ]] || return 0    # SCALING_CASES: a regex of the cases to run
  local kk=(-k on g "$np"); [[ -n ${SCALING_ON_CPU:-} ]] && kk=(-k on t 1)    # CPU: a dry run of the script
  # The host-data path (several ranks, or fold_images no) moves forces onto ghosts and needs
  # newton on, which LAMMPS-KOKKOS on GPUs turns off by default (seen on the H200, 2026-11-30).
  [[ $fold == no ]] && kk+=(-pk kokkos newton on neigh half)
  local cmd=(lmp "${kk[@]}" -sf kk -in bench/in.ghost_modes -log "$log" -screen none
             -var plugin "$plugin" -var reps "$reps" -var zreps "$zreps" -var steps "$steps" -var fold "$fold"
             -var exchange "${SCALING_EXCHANGE:-exchange_swaps auto}")
  # shellcheck disable=SC2206
  [[ $np -gt 1 ]] && cmd=(mpirun --allow-run-as-root --oversubscribe ${SCALING_MPIRUN_ARGS:-} -np "$np" "${cmd[@]}")
  local t0=$SECONDS
  timeout 300 "${cmd[@]}" > "$log.stdout" 2>&1
  local rc=$? atoms loop
  atoms=$(grep -m1 -oE "Created [0-9]+ atoms" "$log" | grep -oE "[0-9]+")
  loop=$(grep -oE "Loop time of [0-9.eE+-]+" "$log" | tail -1 | awk '{print $4}')
  if [[ $rc -ne 0 || -z $loop ]]; then
    echo "| $name | $np | ${atoms:-?} | failed (exit $rc): $(grep -m1 ERROR "$log" "$log.stdout" | cut -c1-160) | | |"
    failed=1
    return
  fi
  local ms; ms=$(awk -v t="$loop" -v n="$steps" 'BEGIN{printf "%.1f", 1e3 * t / n}')
  local rate; rate=$(awk -v t="$loop" -v n="$steps" -v a="$atoms" 'BEGIN{printf "%.3g", a * n / t}')
  local edges; edges=$(grep -oE "edges [0-9.]+ / [0-9]+" "$log" | tail -1)
  echo "| $name | $np | $atoms | $ms | $rate | $edges | $((SECONDS - t0)) s wall |"
}

echo "| case | GPUs (ranks) | atoms | ms/step | atom-steps/s | edges per rank (mean / max) | |"
echo "|---|---|---|---|---|---|---|"
for r in "${reps_list[@]}"; do
  run "strong-r$r-1gpu" 1 "$r" "$r" yes
  run "strong-r$r-1gpu-hostpath" 1 "$r" "$r" no
  run "strong-r$r-2gpu" 2 "$r" "$r" no
done
base=${reps_list[0]}
run "weak-r$base-2gpu" 2 "$base" $((2 * base)) no
exit $failed
