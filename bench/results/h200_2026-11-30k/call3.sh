#!/bin/bash
# Session k, call 3 (one H200, alone): 1. where the 4096-atom L2 tf32 step goes now, per kernel
# with the byte model of the trimmed layers, and the copy / GEMM rates of the same run
# (roofline_probe); 2. the gate's remaining cases: bcc Cu 4394 L3 tf32 (130 ms target), diamond
# 32000 L2 (engine only: torch.compile would need ~7x its 4608-atom 55 GB), diamond 4096 L3
# without recompute (24 GB target), bcc 512 L3 with torch.compile (not reached before).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export NO_LAMMPS=1 BUILD_TARGETS="edgeframe_bench" NO_STATE=1
OUT=$R timeout 200 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; tail -3 $R/build-step.log
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
echo "== profile 4096 L2 tf32 at $((SECONDS - T0)) s"
{ timeout 90 build-gpu/bench/edgeframe_bench --shape L2 --cells 8 --reps 3 --precision tf32 --torch-profile
  timeout 60 python3 tools/roofline_probe.py; } > $R/profile-4096-tf32.log 2>&1
grep -E "step|edgeframe::|family|Kokkos kernels|GEMMs|elementwise|copies|copy|TFLOP|GB/s" $R/profile-4096-tf32.log | head -40
run_gate() {  # name cases columns
  local left=$((570 - (SECONDS - T0)))
  [[ $left -lt 60 ]] && { echo "== no time for gate $1"; return; }
  echo "== gate $1, $left s left"
  OUT=$R GATE_OUT=gate-$1 GATE_BUDGET=$((left - 60)) \
    GATE_ARGS="--case-timeout 200 --cases $2 --columns $3 --repeats 9 --warmup 3" \
    timeout -s INT -k 10 $((left - 10)) scripts/gpu_session.sh gate > $R/gate-$1.out 2>&1
  grep -E "^\|" $R/gate-$1/gate.md 2>/dev/null || tail -30 $R/gate-$1.out
  grep -E "^gate:" $R/gate-$1.out | head -20
}
run_gate engine bcc:4394:L3,diamond:32000:L2,diamond:4096:L3 engine-tf32,engine-fp32
run_gate compile bcc:512:L3 engine-fp32,compile,engine-tf32,compile-tf32
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
