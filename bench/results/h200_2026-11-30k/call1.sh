#!/bin/bash
# Session k (twelfth), call 1 (one H200, alone). A fresh CPU machine this session: no LAMMPS-CUDA
# build to carry, so NO_LAMMPS=1 (Kokkos CUDA built on the CPU machine, carried in deps-gpu).
# 1: build engine + units + bench (state packed for later calls), units on the GPU.
# 2: A/B of one build in one gate run each, medians of 21 steps after 3 warm-ups, L2 tf32 at
#    512 and 4608 atoms: (a) trimmed first/last layers vs EDGEFRAME_ALL_DEGREES=1,
#    (b) in-kernel gate sigmoids vs EDGEFRAME_GATE_TORCH_SIGMOIDS=1.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
export NO_LAMMPS=1 BUILD_TARGETS="edgeframe_unit_tests edgeframe_bench"
OUT=$R timeout 420 scripts/gpu_session.sh build > $R/build-step.log 2>&1; echo "build rc $? at $((SECONDS - T0)) s"; tail -25 $R/build-step.log
mv $R/build-gpu-state.tar.xz $OUT/ 2>/dev/null
OUT=$R timeout 120 scripts/gpu_session.sh test > $R/test-step.log 2>&1; echo "test rc $? at $((SECONDS - T0)) s"; cat $R/test-step.log
source "$(scripts/bootstrap.sh --gpu --print-env)"; export LD_LIBRARY_PATH="$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
run_ab() {
  left=$((575 - (SECONDS - T0)))
  [[ $left -lt 60 ]] && { echo "== no time for the $1 A/B"; return; }
  echo "== A/B $1 ($2), $left s left"
  OUT=$R GATE_OUT=gate-ab-$1 GATE_BUDGET=$((left - 40)) \
    GATE_ARGS="--case-timeout 150 --cases diamond:512:L2,diamond:4400:L2 --columns engine-tf32,engine-b-tf32 --bench-b-env $2 --repeats 21 --warmup 3" \
    timeout -s INT -k 10 $((left - 15)) scripts/gpu_session.sh gate > $R/gate-$1.out 2>&1
  grep -E "^\|" $R/gate-ab-$1/gate.md 2>/dev/null || tail -20 $R/gate-$1.out
}
run_ab trim EDGEFRAME_ALL_DEGREES=1
# Where the 4096-atom L2 tf32 step goes now: per-kernel split, GPU time per family, and the
# fill / copy operators by shape (the 76 non-vectorised elementwise launches of the tenth run).
echo "== profile 4096 L2 tf32 at $((SECONDS - T0)) s"
timeout 90 build-gpu/bench/edgeframe_bench --shape L2 --cells 8 --reps 3 --precision tf32 --torch-profile > $R/profile-4096-tf32.log 2>&1
grep -v "^\s*$" $R/profile-4096-tf32.log | head -90
run_ab sigmoid EDGEFRAME_GATE_TORCH_SIGMOIDS=1
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
