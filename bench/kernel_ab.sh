#!/usr/bin/env bash
# A kernel or engine change against the commit before it, on one GPU, in two device calls on the
# same warm machine (bench/gpu-session.md, "Two builds in one session"):
#   STAGE=build  builds the base (.device/src-head.tar.gz, unpacked into /tmp/head) and this tree
#                (bench, unit tests), then runs this tree's GoogleTest units on the GPU (about
#                5.5 minutes on 16 cores with NO_LAMMPS);
#   STAGE=bench  times both builds, base then new per case so that a drift of the machine hits
#                both: the random UMA-S-shape v2 model in bench case mode (diamond 512, bcc Cu
#                4394, diamond 4096, tf32, with the fenced per-kernel split and the torch
#                profile; diamond 512 fp32) and the v1 L2 shape (diamond 512 tf32); max |dF|
#                between the two builds per case; with NCU_REGEX set, ncu's counters and stall
#                reasons of the kernels whose demangled names match, one diamond 512 tf32 step.
#                AB_PRECISIONS (default tf32): the precisions of the UMA-S-shape cases, in order;
#                AB_EXTRA=0 leaves out the fp32 and L2 cases.
# The base archive holds only what the build reads:
#   git archive BASE CMakeLists.txt cmake src kokkos bench/CMakeLists.txt bench/edgeframe_bench.cpp \
#     tests/CMakeLists.txt tests/unit scripts python pyproject.toml | gzip > .device/src-head.tar.gz
# Run from the repository root with .device carried; results go into $OUT/results.tar.xz.
#   OUT=$OUT STAGE=build bash bench/kernel_ab.sh      then, at once,   OUT=$OUT STAGE=bench bash bench/kernel_ab.sh
# CALL_BUDGET (seconds, default 575) bounds each stage inside the device's 10-minute call.
set -u
T0=$SECONDS
left() { echo $((${CALL_BUDGET:-575} - (SECONDS - T0))); }
# outside $OUT (the tool returns at most 8 files), kept between the stages on a warm machine
R=/tmp/kernel-ab/r
mkdir -p "$R/old" "$R/new"
pack() { tar -C /tmp/kernel-ab -cJf "${OUT:?set OUT}/results.tar.xz" r; }
repo=$PWD
if [[ ${STAGE:-build} == build ]]; then
  rm -rf /tmp/head && mkdir -p /tmp/head && tar xzf .device/src-head.tar.gz -C /tmp/head \
    && ln -sfn "$repo/.device" /tmp/head/.device
  (cd /tmp/head && OUT=$R/old NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS=edgeframe_bench timeout 220 \
    scripts/gpu_session.sh build) > "$R/build-old.log" 2>&1
  echo "base build rc $? at $((SECONDS - T0)) s"; grep -E "built in|error" "$R/build-old.log" | head -5
  t=$(($(left) - 15))
  ((t > 60)) || t=60   # timeout 0 would mean no limit
  OUT=$R/new NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests" timeout $t \
    scripts/gpu_session.sh build test > "$R/build-new.log" 2>&1
  echo "new build and units rc $? at $((SECONDS - T0)) s"
  grep -E "built in|error|PASSED|FAILED|SKIPPED|\[ measured \]" "$R/build-new.log" | head -20
  pack
  exit 0
fi
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
old=/tmp/head/build-gpu/bench/edgeframe_bench new=$repo/build-gpu/bench/edgeframe_bench
[[ -x $old && -x $new ]] || { echo "kernel_ab: a bench binary is missing (run STAGE=build first)"; exit 1; }
pot=/tmp/umas.safetensors cases=/tmp/cases
[[ -f $pot ]] || python3 bench/v2_random_potential.py $pot > "$R/potential.log" 2>&1
[[ -f $cases/diamond512.case && -f $cases/bcc4394.case && -f $cases/diamond4096.case ]] || python3 bench/v2_cases.py --potential $pot --out $cases \
  --cases diamond512,bcc4394,diamond4096 > "$R/cases.log" 2>&1
rm -f /tmp/f-old-* /tmp/f-new-*   # forces of an earlier bench stage on this warm machine
one() {  # build label args...
  local b=$1 label=$2
  shift 2
  local bin=$old
  [[ $b == new ]] && bin=$new
  [[ $(left) -lt 30 ]] && { echo "skipped $b $label: time"; return; }
  timeout 100 "$bin" "$@" --forces-out "/tmp/f-$b-$label" > "$R/$b/$label.log" 2>&1
  echo "$b $label rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"n_edges": [0-9]*' "$R/$b/$label.log" | tr '\n' ' ')"
}
for c in diamond512 bcc4394 diamond4096; do
  reps=20
  [[ $c == diamond4096 ]] && reps=10
  for p in ${AB_PRECISIONS:-tf32}; do
    for b in old new; do
      one $b umas-$c-$p --case $cases/$c.case --potential $pot --precision $p --reps $reps --warmup 3 --torch-profile
    done
  done
  pack
done
if [[ ${AB_EXTRA:-1} == 1 ]]; then
  for b in old new; do one $b umas-diamond512-fp32 --case $cases/diamond512.case --potential $pot --precision fp32 --reps 10 --warmup 2; done
  for b in old new; do one $b L2-512-tf32 --shape L2 --cells 4 --reps 20 --precision tf32; done
fi
python3 - << 'PY' | tee "$R/forces-old-vs-new.txt"
import glob, os
import numpy as np
for f in sorted(glob.glob("/tmp/f-old-*")):
    g = f.replace("/f-old-", "/f-new-")
    if not os.path.exists(g):
        print(os.path.basename(f)[6:], "no new forces"); continue
    a = np.fromfile(f, dtype="<f8"); b = np.fromfile(g, dtype="<f8")
    if a.size == 0 or a.shape != b.shape:
        print(os.path.basename(f)[6:], "shapes differ", a.shape, b.shape); continue
    print(f"{os.path.basename(f)[6:]}: max|dF| {np.abs(a - b).max():.3e} of max|F| {np.abs(a).max():.3e}")
PY
if [[ -n ${NCU_REGEX:-} ]] && command -v ncu > /dev/null; then
  for b in new old; do
    bin=$old
    [[ $b == new ]] && bin=$new
    [[ $(left) -gt 80 ]] || break
    # Kokkos names every kernel after its launcher: match the demangled functor names instead.
    timeout $(($(left) - 40)) ncu --clock-control none --kernel-name-base demangled --kernel-name "regex:$NCU_REGEX" \
      --launch-count 50 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
      --section LaunchStats --section WarpStateStats --section SchedulerStats \
      "$bin" --case $cases/diamond512.case --potential $pot --precision tf32 --reps 1 --warmup 1 > "$R/ncu-$b.log" 2>&1
    echo "ncu $b rc $?"
    xz -T0 "$R/ncu-$b.log"
  done
fi
pack
echo "total $((SECONDS - T0)) s"
