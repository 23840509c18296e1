#!/usr/bin/env bash
# Per-layer exchange vs ghost shell on the diamond example system (bench/results/benchmarks-log.md, "Per-layer
# exchange vs ghost shell (CPU)"): for each rank count, runs bench/in.ghost_modes in both ghost
# modes and prints the predicted and measured graph per rank and the timing lines.
# usage: bench/ghost_modes.sh [reps] [steps] [grids...]   (default: 6 10 "2 1 1" "2 2 1")
# env: EDGEFRAME_BUILD_DIR (default <repo>/build), POTENTIAL, LAYERS, R_CUT, SKIN (for the prediction)
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${EDGEFRAME_BUILD_DIR:-$repo/build}"
# shellcheck disable=SC1090
source "$("$repo/scripts/bootstrap.sh" --print-env)"
reps="${1:-6}"; steps="${2:-10}"; shift $(( $# > 2 ? 2 : $# ))
grids=("$@"); [[ ${#grids[@]} -gt 0 ]] || grids=("2 1 1" "2 2 1")
potential="${POTENTIAL:-$repo/potentials/C-diamond.safetensors}"
python="${EDGEFRAME_PYTHON:-python3}"
out="$build/ghost-modes"; mkdir -p "$out"
export OMP_NUM_THREADS=1
cd "$repo"
for grid in "${grids[@]}"; do
  read -r px py pz <<< "$grid"; np=$((px * py * pz))
  "$python" bench/ghost_modes_predict.py --reps "$reps" --grid "$grid" --layers "${LAYERS:-2}" \
      --r-cut "${R_CUT:-3.5}" --skin "${SKIN:-1.0}" || true
  for mode in exchange shell; do
    log="$out/log.np$np.${grid// /}.$mode"
    /usr/bin/time -f "wall %e s" mpirun --allow-run-as-root --oversubscribe -np "$np" \
        lmp -in bench/in.ghost_modes -log "$log" -screen none -var plugin "$build/src/lammps/edgeframeplugin.so" \
        -var potential "$potential" -var reps "$reps" -var steps "$steps" -var mode "$mode" -var grid "$grid" \
        2> "$log.time"
    echo "measured, $np ranks, grid $grid, $mode ($(cat "$log.time" | tail -1)):"
    grep -E "^edgeframe (graph per rank|timing)|^Loop time" "$log" | sed 's/^/  /'
  done
done
