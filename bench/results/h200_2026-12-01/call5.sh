#!/bin/bash
# Session 2026-12-01, call 5 (one H200, alone; the last device minutes): the largest size tried
# so far, with the default activations auto (no chunk size given: the plan sizes its own chunks
# from the device's free memory), diamond 681 472 atoms L2 tf32, no reference (too large).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export BUILD_TARGETS="edgeframe_bench" NO_STATE=1
OUT=$R timeout 100 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"
left=$((320 - (SECONDS - T0)))
OUT=$R GATE_OUT=gate-largest GATE_BUDGET=$((left - 20)) \
  GATE_ARGS="--no-reference --case-timeout $((left - 15)) --cases diamond:681472:L2 --columns engine-tf32 --repeats 2 --warmup 1" \
  timeout -s INT -k 5 $((left - 5)) scripts/gpu_session.sh gate > $R/gate.out 2>&1
grep -E "^\|" $R/gate-largest/gate.md 2>/dev/null || tail -10 $R/gate.out
grep -E "^gate:" $R/gate.out | head -5
python3 -c "
import json; d=json.load(open('$R/gate-largest/gate.json'))
for r in d['results']: print(r['column'], r.get('activations'), 'model', r.get('predicted_peak_bytes'), 'measured', r.get('peak_bytes'), 'finite', r.get('forces_finite'))" 2>&1 | tail -3
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
