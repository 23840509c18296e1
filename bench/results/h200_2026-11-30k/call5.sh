#!/bin/bash
# Session k, call 5 (one H200, alone, ~200 s): a larger case, diamond 512 000 atoms L2
# (~44 M edges), engine tf32 with activations recomputed in edge chunks of 1 M edges, without
# the PyTorch reference (it would not finish in a call): step time, peak memory, finite forces.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export NO_LAMMPS=1 BUILD_TARGETS="edgeframe_bench" NO_STATE=1
OUT=$R timeout 150 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; tail -2 $R/build-step.log
left=$((230 - (SECONDS - T0)))
OUT=$R GATE_OUT=gate-largest GATE_BUDGET=$((left - 30)) \
  GATE_ARGS="--no-reference --case-timeout $((left - 20)) --edge-chunk 1000000 --cases diamond:512000:L2 --columns engine-tf32-recompute --repeats 2 --warmup 1" \
  timeout -s INT -k 10 $((left - 5)) scripts/gpu_session.sh gate > $R/gate.out 2>&1
grep -E "^\|" $R/gate-largest/gate.md 2>/dev/null || tail -20 $R/gate.out
grep -E "^gate:" $R/gate.out | head
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
