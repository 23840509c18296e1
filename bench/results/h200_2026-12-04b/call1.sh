#!/usr/bin/env bash
# H200 calls 1 and 2 (issue #24 item 5, issue #26 item 2): every load before the first store in
# the short-degree forms of pack forward, pack backward-edge (call 1 only), unrotate backward
# and the gate.
# HEAD's kernels (.device/src-head.tar.gz, built in /tmp/head) against this tree's, same call, one H200: the random UMA-S-shape v2 model
# in bench case mode (diamond 512, bcc 4394, diamond 4096; tf32; median step, then the fenced
# per-kernel split and the torch profile) and the v1 L2 shape (diamond 512, tf32 and fp32),
# with max |dF| between the two builds; then ncu (hardware counters, stall reasons) of the new
# build's edge kernels in one UMA-S diamond 512 tf32 step. Predictions: predictions.md.
#   run from the repository root: OUT=... STAGE=build bash bench/results/h200_2026-12-04b/call1.sh
#   (both builds and the GPU units), then on the still warm machine STAGE=bench (the timings).
set -u
T0=$SECONDS
left() { echo $(( ${CALL_BUDGET:-575} - (SECONDS - T0) )); }
R=$OUT/r; mkdir -p $R/old $R/new
pack() { tar -C $OUT -cJf $OUT/results.tar.xz r; }
repo=$PWD
if [[ ${STAGE:-build} == build ]]; then
mkdir -p /tmp/head && tar xzf .device/src-head.tar.gz -C /tmp/head && ln -sfn $repo/.device /tmp/head/.device
(cd /tmp/head && OUT=$R/old NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS=edgeframe_bench timeout 220 scripts/gpu_session.sh build) \
  > $R/build-old.log 2>&1
echo "old build rc $? at $((SECONDS - T0)) s"; grep -E "built in|error" $R/build-old.log | head -5
OUT=$R/new NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests" timeout 360 scripts/gpu_session.sh build test > $R/build-new.log 2>&1
echo "new build and units rc $? at $((SECONDS - T0)) s"; grep -E "built in|error|PASSED|FAILED|SKIPPED" $R/build-new.log | head -8
pack
exit 0
fi
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
old=/tmp/head/build-gpu/bench/edgeframe_bench new=$repo/build-gpu/bench/edgeframe_bench
[[ -x $old && -x $new ]] || { echo "a bench binary is missing"; exit 1; }
pot=/tmp/umas.safetensors cases=/tmp/cases
[[ -f $pot ]] || python3 bench/v2_random_potential.py $pot > $R/potential.log 2>&1
[[ -f $cases/diamond4096.case ]] || python3 bench/v2_cases.py --potential $pot --out $cases \
  --cases diamond512,bcc4394,diamond4096 > $R/cases.log 2>&1
one() {  # build label args...
  local b=$1 label=$2; shift 2
  local bin=$old; [[ $b == new ]] && bin=$new
  [[ $(left) -lt 30 ]] && { echo "skipped $b $label: time"; return; }
  timeout 100 "$bin" "$@" --forces-out /tmp/f-$b-$label > $R/$b/$label.log 2>&1
  echo "$b $label rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"n_edges": [0-9]*\|^  step (energy+forces+virial): [0-9.]* s' $R/$b/$label.log | tr '\n' ' ')"
}
# Alternate old and new per case so that a drift of the machine hits both.
for c in diamond512 bcc4394 diamond4096; do
  reps=20; [[ $c == diamond4096 ]] && reps=10
  for b in old new; do one $b umas-$c-tf32 --case $cases/$c.case --potential $pot --precision tf32 --reps $reps --warmup 3 --torch-profile; done
  pack
done
for b in old new; do one $b umas-diamond512-fp32 --case $cases/diamond512.case --potential $pot --precision fp32 --reps 10 --warmup 2; done
for p in tf32; do
  for b in old new; do one $b L2-512-$p --shape L2 --cells 4 --reps 20 --precision $p; done
done
python3 - <<'PY' | tee $R/forces-old-vs-new.txt
import glob, os
import numpy as np
for f in sorted(glob.glob("/tmp/f-old-*")):
    g = f.replace("/f-old-", "/f-new-")
    if not os.path.exists(g):
        print(os.path.basename(f)[6:], "no new forces"); continue
    a = np.fromfile(f, dtype="<f8"); b = np.fromfile(g, dtype="<f8")
    if a.shape != b.shape:
        print(os.path.basename(f)[6:], "shapes differ", a.shape, b.shape); continue
    print(f"{os.path.basename(f)[6:]}: max|dF| {np.abs(a - b).max():.3e} of max|F| {np.abs(a).max():.3e}")
PY
# ncu of one step's edge kernels (the warm-up step's: the first 50 matching launches; call 1
# matched the base name, which is Kokkos' launcher for every functor, and profiled nothing).
for b in new old; do
  bin=$old; [[ $b == new ]] && bin=$new
  if command -v ncu > /dev/null && [[ $(left) -gt 80 ]]; then
    timeout $(( $(left) - 40 )) ncu --clock-control none --kernel-name-base demangled \
      --kernel-name regex:"kk::(Pack|Unrotate|So2Gate|LayerNorm)" \
      --launch-count 50 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section WarpStateStats --section SchedulerStats \
      $bin --case $cases/diamond512.case --potential $pot --precision tf32 --reps 1 --warmup 1 > $R/ncu-$b.log 2>&1
    echo "ncu $b rc $?: $(grep -c '^  [a-z].*cuda_parallel_launch' $R/ncu-$b.log) kernels"; xz -T0 $R/ncu-$b.log
  fi
done
pack
echo "total $((SECONDS - T0)) s"
