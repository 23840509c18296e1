#!/bin/bash
# Where LAMMPS' 0.49 ms over the engine replay goes at 512 atoms (issue 23 item 5; call 2: L2
# diamond 512, tf32, skin 0, lammps-tf32-graph 9.45 ms against engine-tf32-graph 8.96). A cold
# machine: the build, the gate's two graph columns on the 512-atom case (it writes the LAMMPS
# input), then that input again under four settings, each log returned:
#   base    as the gate ran it (the pair style's basic timing line: graph + upload | engine | results);
#   sync    `timer full sync`: LAMMPS' own split (Pair, Neigh, Comm, Output, Other);
#   detail  pair_style ... timing detail (fences every kernel: a split, not a speed);
#   nocheck `neigh_modify every 1000 delay 0 check no`: without LAMMPS' per-step neighbour check.
# Carried: .device/deps-gpu.tar.xz. Predictions: predictions.md.
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
export BUILD_TARGETS="edgeframeplugin edgeframe_bench" NO_STATE=1
OUT=$R timeout 240 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"
OUT=$R GATE_OUT=gate GATE_BUDGET=60 \
  GATE_ARGS="--no-reference --case-timeout 60 --cases diamond:512:L2 --lmp-skin 0.0 --columns engine-tf32-graph,lammps-tf32-graph --repeats 21 --warmup 3" \
  timeout -s INT -k 10 90 scripts/gpu_session.sh gate > "$R/gate.out" 2>&1
echo "gate rc $? at $((SECONDS - T0)) s"; grep -E "^\|" "$R/gate/gate.md"
source "$(scripts/bootstrap.sh --gpu --print-env)"
export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}" PATH="$LAMMPS_ROOT/bin:$PATH"
inp=$(ls /tmp/gate-*/diamond-512-L2.graph.in | head -1)
for v in base sync detail nocheck; do
  case $v in
    base) sed -e 's/^run 50$/run 200/' "$inp" ;;
    sync) sed -e 's/^thermo 50$/timer full sync\nthermo 50/' -e 's/^run 50$/run 200/' "$inp" ;;
    detail) sed -e 's/^\(pair_style .*\)$/\1 timing detail/' -e 's/^run 50$/run 200/' "$inp" ;;
    nocheck) sed -e 's/^thermo 50$/neigh_modify every 1000 delay 0 check no\nthermo 50/' -e 's/^run 50$/run 200/' "$inp" ;;
  esac > "$R/in.$v"
  (cd "$(dirname "$inp")" && timeout 60 lmp -k on g 1 -sf kk -pk kokkos neigh full newton off -in "$R/in.$v" \
     -log "$R/log.$v" -screen none > /dev/null 2>&1)
  echo "$v rc $?: $(grep -E 'Loop time' "$R/log.$v" | tail -1)"
  grep -E "^edgeframe timing" "$R/log.$v" | sed 's/^/  /'
done
grep -A12 "MPI task timing breakdown" "$R/log.sync" | tail -11
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
