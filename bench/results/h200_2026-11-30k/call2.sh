#!/bin/bash
# Session k, call 2 (one H200, alone): the gate against torch.compile in one run, after the
# trimmed layers and in-kernel gate sigmoids (call 1): diamond 4608 L2 (the 3x target in tf32,
# fp32 1.5x, memory) and 512 L2, columns engine-fp32, engine-tf32, compile, compile-tf32.
# Call 1's build carried (only bench.cpp changed since: its per-kernel byte model).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export NO_LAMMPS=1 BUILD_TARGETS="edgeframe_bench" NO_STATE=1
OUT=$R timeout 200 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; tail -4 $R/build-step.log
left=$((570 - (SECONDS - T0)))
OUT=$R GATE_OUT=gate-compile GATE_BUDGET=$((left - 90)) \
  GATE_ARGS="--case-timeout 240 --cases diamond:4400:L2,diamond:512:L2 --columns engine-tf32,compile-tf32,engine-fp32,compile --repeats 11 --warmup 3" \
  timeout -s INT -k 10 $((left - 10)) scripts/gpu_session.sh gate > $R/gate.out 2>&1
grep -E "^\|" $R/gate-compile/gate.md 2>/dev/null || tail -30 $R/gate.out
grep -E "^gate:" $R/gate.out | head
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
