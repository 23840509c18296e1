#!/bin/bash
# Session 2026-12-01, call 1 (one H200, alone). Engine only (NO_LAMMPS: LAMMPS-CUDA is still
# building on the CPU machine): build units + bench (state packed for later calls), units on
# the GPU (the new memory-plan tests among them), then
# 1: kernel A/Bs of one build, bench shape mode (unfenced step + fenced per-kernel split), L2
#    4096 atoms and L3 1728 atoms, tf32: base, EDGEFRAME_GATE_SIGMOID_DOUBLE=1,
#    EDGEFRAME_PACK_BWD_BOUNDED=1, base again (the spread);
# 2: L3 diamond 4096 (647k edges) under a 24 GB budget: activations keep vs auto
#    (--memory-budget 24), tf32 and fp32, against the fp64 reference.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export NO_LAMMPS=1 BUILD_TARGETS="edgeframe_unit_tests edgeframe_bench"
OUT=$R timeout 300 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; tail -6 $R/build-step.log
mv $R/build-gpu-state.tar.xz $OUT/ 2>/dev/null
OUT=$R timeout 120 scripts/gpu_session.sh test > $R/test-step.log 2>&1; echo "test rc $? at $((SECONDS - T0)) s"; tail -8 $R/test-step.log
grep -E "memory|Memory|FAILED" $R/unit-gpu.log | head -20
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
B=build-gpu/bench/edgeframe_bench
echo "== kernel A/Bs at $((SECONDS - T0)) s"
for v in base EDGEFRAME_GATE_SIGMOID_DOUBLE=1 EDGEFRAME_PACK_BWD_BOUNDED=1 base; do
  envs=(); [[ $v != base ]] && envs=("$v")
  for shape in "L2 8 11" "L3 6 7"; do
    set -- $shape
    echo "-- $v $1 cells $2" >> $R/kernel-ab.log
    env "${envs[@]}" timeout 60 $B --shape $1 --cells $2 --reps $3 --precision tf32 >> $R/kernel-ab.log 2>&1
  done
done
grep -E "^-- |step|so2_gate|pack_backward_edge" $R/kernel-ab.log | head -80
left=$((570 - (SECONDS - T0)))
echo "== L3 4096 under a 24 GB budget at $((SECONDS - T0)) s, $left s left"
OUT=$R GATE_OUT=gate-budget GATE_BUDGET=$((left - 40)) \
  GATE_ARGS="--case-timeout 150 --cases diamond:4096:L3 --columns engine-tf32-keep,engine-tf32,engine-fp32 --memory-budget 24 --repeats 5 --warmup 2" \
  timeout -s INT -k 10 $((left - 10)) scripts/gpu_session.sh gate > $R/gate-budget.out 2>&1
grep -E "^\|" $R/gate-budget/gate.md 2>/dev/null || tail -20 $R/gate-budget.out
python3 -c "
import json; d=json.load(open('$R/gate-budget/gate.json'))
for r in d['results']: print(r['column'], r.get('activations'), 'model', r.get('predicted_peak_bytes'), 'measured', r.get('peak_bytes'), r.get('median_s'))" 2>&1 | tail -5
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
