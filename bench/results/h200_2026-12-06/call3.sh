#!/bin/bash
# Right after call 2 on the warm machine (build-gpu/ and /tmp/old-bench in place): issue 23 item
# 5's columns, L2 diamond 512 and 4608, tf32, one gate: the engine replayed (this build and the
# base's), edgeframe/kk with graph per_rebuild + cuda_graph yes at skin 0; then the LAMMPS column
# again at skin 0.5 A, where the kept graph now compacts the candidates to r < r_cut (the step's
# edges equal skin 0's). Predictions: predictions.md.
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
OUT=$R GATE_OUT=gate-skin0 GATE_BUDGET=240 \
  GATE_ARGS="--bench-b /tmp/old-bench --case-timeout 150 --cases diamond:512:L2,diamond:4400:L2 --lmp-skin 0.0 --columns engine-tf32-graph,engine-b-tf32-graph,lammps-tf32-graph --repeats 21 --warmup 3" \
  timeout -s INT -k 10 290 scripts/gpu_session.sh gate > "$R/gate-skin0.out" 2>&1
echo "gate skin 0 rc $? at $((SECONDS - T0)) s"
grep -E "^\|" "$R/gate-skin0/gate.md" 2>/dev/null || tail -20 "$R/gate-skin0.out"
left=$((570 - (SECONDS - T0)))
OUT=$R GATE_OUT=gate-skin05 GATE_BUDGET=$((left - 40)) \
  GATE_ARGS="--no-reference --case-timeout 120 --cases diamond:512:L2,diamond:4400:L2 --lmp-skin 0.5 --columns lammps-tf32-graph --repeats 21 --warmup 3" \
  timeout -s INT -k 10 $((left - 15)) scripts/gpu_session.sh gate > "$R/gate-skin05.out" 2>&1
echo "gate skin 0.5 rc $? at $((SECONDS - T0)) s"
grep -E "^\|" "$R/gate-skin05/gate.md" 2>/dev/null || tail -20 "$R/gate-skin05.out"
grep -rh "edgeframe graph\|kept graph\|cuda_graph:" "$R"/gate-skin05/*.log 2>/dev/null | sort | uniq -c | head -10
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
