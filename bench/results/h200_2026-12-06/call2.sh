#!/bin/bash
# Right after call 1b on the warm machine (LAMMPS-CUDA in /opt/edgeframe-deps, build-gpu/ built
# or partly built). Most important first, each result written to $OUT as it comes (the session's
# device time may end inside this call):
#   1. the build finished if call 1b was cut short;
#   2. the fenced per-kernel split, 512-atom L2 tf32, with the parted unrotate forward pass
#      (df2fcb6, edge_list_parts) and without (EDGEFRAME_UNROTATE_PARTS=1, the temporary A/B switch);
#   3. the gate at 512 atoms, skin 0: engine replayed with and without parts (engine-b: the same
#      bench under the switch), edgeframe/kk with graph per_rebuild + cuda_graph yes;
#   4. the GPU units of the change (pack / unrotate both forms and the parted forward; the
#      evaluator's invariances under zero-contribution edges; the CUDA-graph tests);
#   5. the LAMMPS column at skin 0.5 A (the kept graph compacted to r < r_cut), 512 atoms;
#   6. the gate at 4608 atoms, skin 0, as 3.
# Predictions: predictions.md.
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
left() { echo $((575 - (SECONDS - T0))); }
OUT=/tmp NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" timeout 300 \
  scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-step.log" | head -5
source "$(scripts/bootstrap.sh --gpu --print-env)"
export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for v in parted unparted; do
  echo "-- $v"
  if [[ $v == unparted ]]; then export EDGEFRAME_UNROTATE_PARTS=1; fi
  timeout 60 build-gpu/bench/edgeframe_bench --shape L2 --cells 4 --reps 11 --precision tf32 2>&1 | grep -E "^L2|^  step|unrotate|pack_backward_node"
  unset EDGEFRAME_UNROTATE_PARTS
done | tee "$R/split.log"
gate() {  # name, budget, args
  OUT=$R GATE_OUT=$1 GATE_BUDGET=$2 GATE_ARGS="$3" timeout -s INT -k 10 $(($2 + 40)) scripts/gpu_session.sh gate > "$R/$1.out" 2>&1
  echo "gate $1 rc $? at $((SECONDS - T0)) s"; grep -E "^\|" "$R/$1/gate.md" 2>/dev/null || tail -20 "$R/$1.out"
}
G3="--bench-b-env EDGEFRAME_UNROTATE_PARTS=1 --case-timeout 100 --lmp-skin 0.0 --columns engine-tf32-graph,engine-b-tf32-graph,lammps-tf32-graph --repeats 21 --warmup 3"
gate gate-512-skin0 120 "$G3 --cases diamond:512:L2"
(cd build-gpu && timeout 150 ./tests/edgeframe_unit_tests --gtest_brief=1 \
  --gtest_filter='*PackUnrotate*:Evaluator.EdgesBeyond*:Evaluator.AKeptGraph*:*CudaGraph*') > "$R/units.log" 2>&1
echo "units rc $? at $((SECONDS - T0)) s"; tail -6 "$R/units.log"
gate gate-512-skin05 60 "--no-reference --case-timeout 60 --cases diamond:512:L2 --lmp-skin 0.5 --columns lammps-tf32-graph --repeats 21 --warmup 3"
grep -h "edgeframe graph\|kept graph\|cuda_graph:" /tmp/gate-*/*.log 2>/dev/null | sort | uniq -c | head -10
[[ $(left) -gt 150 ]] && gate gate-4608-skin0 $(($(left) - 50)) "$G3 --cases diamond:4400:L2"
echo "total $((SECONDS - T0)) s"
