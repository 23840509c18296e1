#!/bin/bash
# Right after call 1 on the warm machine (LAMMPS-CUDA in /opt/edgeframe-deps, the partial
# build-gpu/ tree): finish the plugin and bench build, then issue 23 item 5's LAMMPS columns,
# the gate of bench/results/h200_2026-12-04c/call6.sh (L2 diamond 512 and 4608, tf32, skin 0:
# the engine eager and replayed, LAMMPS with the default per-step graph and with graph
# per_rebuild cuda_graph yes). Carried: .device/deps-gpu.tar.xz (call 1's), so that a cold
# machine still finds LAMMPS. Predictions: predictions.md.
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 240 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror|present|unpack" "$R/build-step.log" | head -8
left=$((570 - (SECONDS - T0)))
OUT=$R GATE_OUT=gate-skin0 GATE_BUDGET=$((left - 30)) \
  GATE_ARGS="--case-timeout 120 --cases diamond:512:L2,diamond:4400:L2 --lmp-skin 0.0 --columns engine-tf32,engine-tf32-graph,lammps-tf32,lammps-tf32-graph --repeats 21 --warmup 3" \
  timeout -s INT -k 10 $((left - 15)) scripts/gpu_session.sh gate > "$R/gate-skin0.out" 2>&1
echo "gate rc $? at $((SECONDS - T0)) s"
grep -E "^\|" "$R/gate-skin0/gate.md" 2>/dev/null || tail -20 "$R/gate-skin0.out"
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
