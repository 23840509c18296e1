#!/usr/bin/env bash
# Issue 26's memory targets on one GPU in one call: a random-weight v2 file of UMA-S's shape
# (bench/v2_random_potential.py), engine bench case mode, tf32:
#   bcc Cu 4394 (281 226 edges): keep, every layer recomputed in chunks of 65 536 edges, stream in
#     the same chunks, and activations auto under a 1.5 GB budget (target: peak <= 1.5 GB), each
#     with its peak (torch's allocator + workspace + graph), the model's, the step time and
#     max |dF| / max |F| against keep;
#   bcc Cu 1 024 000 (80^3 cells, about 65.5 M edges): activations auto on the card's own memory
#     (target: one force step of a million atoms on one H200), its plan, peak and time, in the
#     engine and through LAMMPS (edgeframe/kk, run 1: the Loop time is one step).
#
#   bench/v2_memory.sh OUTDIR
#
# GPU machine: build-gpu/ (bench and plugin; BUILD_DIR overrides), lmp with KOKKOS CUDA on PATH
# (LMP, KOKKOS_ARGS override). V2_MEMORY_SMOKE=1: the same
# chain on a CPU with the shipped C-diamond-v2 file on 512- and 4096-atom diamond, budgets
# scaled down, fp32 (it checks the plumbing, not the targets). Writes OUTDIR/<run>.log, the
# forces, OUTDIR/memory.md and memory.json (tools/v2_memory_table.py).
set -u
out=${1:?usage: bench/v2_memory.sh OUTDIR}
mkdir -p "$out"
T0=$SECONDS
py=${EDGEFRAME_PYTHON:-python3}
if [[ -n ${V2_MEMORY_SMOKE:-} ]]; then
  build=${BUILD_DIR:-$PWD/build} kokkos=${KOKKOS_ARGS:--k on t 2 -sf kk}
  pot=potentials/C-diamond-v2.safetensors precision=fp32 small=diamond512 large=diamond4096 task=""
  chunk=2048 budget=0.05 reps=1
else
  build=${BUILD_DIR:-$PWD/build-gpu} kokkos=${KOKKOS_ARGS:--k on g 1 -sf kk}
  pot=$out/umas.safetensors precision=tf32 small=bcc4394 large=bcc1024000 task="task omat"
  chunk=65536 budget=1.5 reps=5
  "$py" bench/v2_random_potential.py "$pot" || exit 1
fi
bench=$build/bench/edgeframe_bench
echo "== cases ($small, $large) at $((SECONDS - T0)) s"
"$py" bench/v2_cases.py --potential "$pot" --out "$out/cases" --cases "$small,$large" || exit 1
echo "cases written at $((SECONDS - T0)) s"
run() {  # NAME CASE REPS ARGS...: one bench run, its RESULT line kept in NAME.log
  local name=$1 case=$2 n=$3
  shift 3
  echo "== $name at $((SECONDS - T0)) s: $*"
  "$bench" --case "$out/cases/$case.case" --potential "$pot" --precision "$precision" --reps "$n" --warmup 1 \
    --forces-out "$out/$name.forces" "$@" > "$out/$name.log" 2>&1
  echo "$name rc $?: $(grep -o '"activations": "[^"]*"' "$out/$name.log")"
}
run small-keep "$small" "$reps" --activations keep
run small-recompute "$small" "$reps" --activations recompute --edge-chunk "$chunk"
run small-stream "$small" "$reps" --activations stream --edge-chunk "$chunk"
run small-auto-budget "$small" "$reps" --activations auto --memory-budget "$budget"
run large-auto "$large" 1 --activations auto
echo "== large-lammps at $((SECONDS - T0)) s: edgeframe/kk, activations auto"
{
  echo "units metal"
  echo "atom_style atomic"
  echo "atom_modify map array"
  echo "boundary p p p"
  echo "read_data $out/cases/$large.data"
  echo "plugin load $build/src/lammps/edgeframeplugin.so"
  echo "pair_style edgeframe precision $precision $task"
  echo "pair_coeff * * $pot $(cat "$out/cases/$large.elements")"
  echo "thermo_style custom step pe"
  echo "run 1"
} > "$out/in.large"
${LMP:-lmp} $kokkos -pk kokkos newton off neigh full -in "$out/in.large" -log "$out/large-lammps.log" > /dev/null 2>&1
echo "large-lammps rc $?: $(grep -E 'edgeframe activations auto on rank 0|Loop time' "$out/large-lammps.log" | tr '\n' ' ')"
echo "runs done at $((SECONDS - T0)) s"
"$py" tools/v2_memory_table.py "$out" && cat "$out/memory.md"
