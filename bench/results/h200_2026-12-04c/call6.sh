#!/bin/bash
# H200 call 6, right after call 5 on the warm machine (build-gpu/ and the dependency prefix are
# still there): issue 23 item 5's LAMMPS columns again on today's kernels, the gate of
# bench/results/h200_2026-12-02/call2.sh at skin 0 (L2 diamond 512 and 4400, tf32): the engine
# eager and replayed, LAMMPS with the default per-step graph and with graph per_rebuild
# cuda_graph yes. Predictions: predictions.md.
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
OUT=$R GATE_OUT=gate-skin0 GATE_BUDGET=220 \
  GATE_ARGS="--case-timeout 120 --cases diamond:512:L2,diamond:4400:L2 --lmp-skin 0.0 --columns engine-tf32,engine-tf32-graph,lammps-tf32,lammps-tf32-graph --repeats 21 --warmup 3" \
  timeout -s INT -k 10 280 scripts/gpu_session.sh gate > "$R/gate-skin0.out" 2>&1
echo "gate rc $? at $((SECONDS - T0)) s"
grep -E "^\|" "$R/gate-skin0/gate.md" 2>/dev/null || tail -20 "$R/gate-skin0.out"
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
