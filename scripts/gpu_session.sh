#!/usr/bin/env bash
# What one call on the GPU machine runs (issue #7), from the repository root there:
#
#   OUT=$OUT scripts/gpu_session.sh build test gate profile example scaling   (any subset, in order)
#
# lammps: build Kokkos and LAMMPS with KOKKOS CUDA here from the carried tarballs and pack them
#        into $OUT/deps-gpu.tar.xz (a machine with no earlier .device/deps-gpu.tar.xz; see
#        do_lammps).
# build: unpack the carried dependency build (.device/deps-gpu.tar.xz: Kokkos 5.0.2 CUDA
#        HOPPER90 + LAMMPS KOKKOS CUDA, made on that machine by `scripts/bootstrap.sh --gpu`)
#        and the trimmed LAMMPS source, then build edgeframe (engine, plugin, tests, bench) into
#        build-gpu with all cores (BUILD_TARGETS: only those); pack the whole build tree into
#        $OUT/build-gpu-state.tar.xz: a later call that carries it as .device/ recompiles only
#        the sources that changed (see do_build). CMAKE_EXTRA: more cmake -D options, split at
#        spaces (e.g. the Python module's -DEDGEFRAME_BUILD_PYTHON=ON -Dpybind11_DIR=...).
# test:  the GoogleTest units on the GPU (every kernel typed over Kokkos::Cuda and Serial,
#        the evaluator against the goldens) and the LAMMPS-level tests with the CUDA plugin
#        (the plain style runs the engine on the GPU; /kk with -k on g 1 -sf kk).
#        LAMMPS_TESTS picks a subset (pytest node ids; LAMMPS_TEST_K a pytest -k expression,
#        LAMMPS_TEST_ARGS more pytest options, split at spaces; -rA names each test's outcome,
#        whereas -v only cancels the step's own -q): on the GPU each lmp start loads the
#        CUDA libraries of torch and Kokkos, which makes the whole suite slow there.
# gate:  tools/gate.py (GATE_ARGS, GATE_BUDGET) into $OUT/gate (GATE_OUT: another name, for a
#        second gate in one call).
# profile: bench/edgeframe_bench's per-kernel split (fenced around each kernel) and compulsory
#        bytes / FLOPs per kernel, then GPU time per kernel family and the heaviest torch and
#        Kokkos kernels (--torch-profile), L2 and L3 at 512 atoms in fp32 and L2 in tf32, into
#        $OUT/profile.log.
# ncu:   the profile step's ncu part alone (also run by profile with NCU=1): hardware counters and
#        warp stall reasons of one L2 step's Kokkos kernels into $OUT/ncu.log.xz.
# Run it from a script file, never as `bash /dev/stdin <<EOF` (bench/gpu-session.md).
# memprofile: bench/edgeframe_bench --memory-profile (one step under LibTorch's profiler with
#        memory events: the peak, what the backward starts with, the operators at the peak), L2
#        and L3 at 512 atoms in fp32 and tf32, into $OUT/memprofile.log. Memory only: it may
#        share the host with other work.
# example: examples/gpu/in.diamond-gpu into $OUT/log.diamond-gpu.
# precision: the shipped carbon potential on the 4096-atom box in fp64, fp32 and tf32 (forces of
#        one configuration compared with fp64; bench/in.forces_dump), then NVE in fp32 and tf32
#        (examples/gpu, PRECISION_STEPS steps), into $OUT/precision.log.
# scaling: bench/gpu_scaling.sh (1 vs 2 GPUs, issue #8; SCALING_ARGS) into $OUT/scaling.
#        SCALING_MPI_ENV=FILE sources FILE first (OpenMPI settings, e.g. the mpi step's choice).
# exchange-ab: bench/gpu_exchange_ab.sh (issue #8): the exchange variants (EXCHANGE_VARIANTS,
#        default lammps direct pe8) on two GPUs in one table, into $OUT/exchange-ab.md and
#        $OUT/exchange-ab-logs.tar.xz (SCALING_MPI_ENV applies).
# mpi:   bench/mpi_transports.sh: two-rank MPI swap bandwidth under several OpenMPI transport
#        settings, into $OUT/mpi.log, and the fastest setting as $OUT/mpi-best.env.
# Logs go to $OUT/*.log. The machine has no network: everything comes from .device/.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
OUT=${OUT:?set OUT to the folder whose files come back}
prefix=${EDGEFRAME_DEPS:-/opt/edgeframe-deps}
build=$repo/build-gpu
export EDGEFRAME_PYTHON=${EDGEFRAME_PYTHON:-python3} TORCH_CUDA_ARCH_LIST=9.0 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
status=0

# NO_LAMMPS=1: the carried deps-gpu.tar.xz holds Kokkos only (built on the CPU machine with
# nvcc, which needs no GPU): the engine, units and bench are built, the plugin and the LAMMPS
# steps are not (a fresh CPU machine has no earlier LAMMPS-CUDA build to carry, and building
# LAMMPS here takes 8 of a call's 10 minutes).
no_lammps=${NO_LAMMPS:-0}
deps() {
  local stamp=lammps-20260704-cuda-hopper90
  [[ $no_lammps == 1 ]] && stamp=kokkos-5.0.2-cuda-hopper90
  if [[ ! -f $prefix/stamps/$stamp && ! -f .device/deps-gpu.tar.xz && $want_lammps_step == 1 ]]; then
    echo "== deps: no .device/deps-gpu.tar.xz: Kokkos and LAMMPS are built by the lammps step"
  elif [[ ! -f $prefix/stamps/$stamp ]]; then
    mkdir -p "$prefix" && tar xJf .device/deps-gpu.tar.xz -C "$prefix" || return 1
    rm -f "$prefix/stamps/lammps-20260704-src"    # the tarball holds the build, not the source
    # The 2026-11-29 tarball lacks LAMMPS' stamp: without it bootstrap rebuilds LAMMPS (8 min,
    # which cost the 2026-11-30 first call its whole 10 minutes).
    [[ -x $prefix/lammps-20260704-cuda-hopper90/bin/lmp ]] && date -u +%FT%TZ > "$prefix/stamps/lammps-20260704-cuda-hopper90"
  fi
  if [[ $want_lammps_step == 0 ]]; then
    EDGEFRAME_TARBALLS=$repo/.device scripts/bootstrap.sh --gpu $([[ $no_lammps == 1 ]] && echo --no-lammps) > /tmp/bootstrap.log 2>&1 \
      || { tail -20 /tmp/bootstrap.log; return 1; }
    deps_env
  fi
}

deps_env() {
  # shellcheck disable=SC1090
  source "$(scripts/bootstrap.sh --gpu --print-env)"
  export PATH=/usr/local/cuda/bin:$PATH
  # The carried lmp has no rpath to its liblammps (seen 2026-11-30: exit 127 at `lmp -h`).
  export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
  # ... and no include/ (the plugin compiles against LAMMPS' source tree; LAMMPS' CMake config
  # still names the folder).
  mkdir -p "$LAMMPS_ROOT/include"
}

# Sources whose content a build depends on (for the incremental rebuild below).
source_files() {
  find . \( -path ./build-gpu -o -path ./.device -o -path ./.git -o -path ./build -o -name '__pycache__' \) -prune -o \
    -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name 'CMakeLists.txt' \
    -o -name '*.cmake' -o -name '*.in' \) -print | sort
}

# A carried build (.device/build-gpu-state.tar.xz: the whole build tree with objects, made by
# an earlier call) is reused: sources whose sha256 matches the manifest taken at that build get
# an old mtime, so ninja recompiles only what changed. Without it: a full compile (~6 min).
do_build() {
  local state=.device/build-gpu-state.tar.xz
  if [[ -f $state && ! -d $build ]]; then
    echo "== build: unpacking the carried $state"
    tar xJf "$state"
    if [[ $(cat "$build/.repo-path" 2>/dev/null) == "$repo" ]]; then
      (sha256sum -c "$build/.sources.sha256" 2>/dev/null || true) | sed -n 's/: OK$//p' | xargs -r touch -d @946684800
      echo "   sources changed since that build: $( (sha256sum -c "$build/.sources.sha256" 2>/dev/null || true) | grep -c FAILED)"
    else
      echo "   built in $(cat "$build/.repo-path" 2>/dev/null), here is $repo: rebuilding from scratch"; rm -rf "$build"
    fi
  fi
  echo "== build: configure + compile ($(nproc) cores)"
  local t0=$SECONDS
  # The plugin switch is passed both ways: a carried NO_LAMMPS build tree has OFF in its cache.
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$Kokkos_ROOT/bin/nvcc_wrapper" \
    -DEDGEFRAME_BUILD_PLUGIN=$([[ $no_lammps == 1 ]] && echo OFF || echo ON) ${CMAKE_EXTRA:-} \
    > "$OUT/build.log" 2>&1 && cmake --build "$build" -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >> "$OUT/build.log" 2>&1 \
    || { grep -E "error|Error" "$OUT/build.log" | head -30; tail -15 "$OUT/build.log"; return 1; }
  echo "   built in $((SECONDS - t0)) s ($(grep -c "Building" "$OUT/build.log") compiles)"
  grep -A12 "edgeframe .* configuration" "$OUT/build.log"
  [[ -n ${NO_STATE:-} ]] && return 0    # the last call of a session: nothing to carry on
  echo "$repo" > "$build/.repo-path"
  source_files | xargs sha256sum > "$build/.sources.sha256"
  tar cf - build-gpu | xz -T0 -6 > "$OUT/build-gpu-state.tar.xz"
  ls -la "$OUT/build-gpu-state.tar.xz"
}

do_test() {
  local t0=$SECONDS
  if [[ -n ${BUILD_TARGETS:-} && " $BUILD_TARGETS " != *" edgeframe_unit_tests "* ]]; then
    # A carried build tree may hold a unit-test binary built from older sources: never run it.
    echo "== test: GoogleTest units skipped (BUILD_TARGETS does not build edgeframe_unit_tests)"
  else
    echo "== test: GoogleTest units on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
    # The CUDA-graph test on its own, after the rest: a capture that went wrong in a way that
    # kills the process must not take the other units' results with it.
    (cd "$build" && ./tests/edgeframe_unit_tests --gtest_brief=1 --gtest_filter=-*CudaGraph*) > "$OUT/unit-gpu.log" 2>&1 || status=1
    tail -5 "$OUT/unit-gpu.log"
    (cd "$build" && ./tests/edgeframe_unit_tests --gtest_filter=*CudaGraph*) >> "$OUT/unit-gpu.log" 2>&1 || status=1
    tail -3 "$OUT/unit-gpu.log"; echo "   $((SECONDS - t0)) s"
  fi
  if [[ $no_lammps == 1 ]]; then echo "== test: LAMMPS-level tests skipped (NO_LAMMPS=1: no LAMMPS in this call)"; return; fi
  echo "== test: LAMMPS-level tests, CUDA plugin (plain style on the GPU; /kk with -k on g 1 -sf kk)"
  t0=$SECONDS
  EDGEFRAME_KOKKOS_ARGS=${EDGEFRAME_KOKKOS_ARGS:-"-k on g 1 -sf kk"} timeout "${LAMMPS_TEST_TIMEOUT:-300}" "$EDGEFRAME_PYTHON" -m pytest -q \
    -p no:cacheprovider --durations=0 ${LAMMPS_TESTS:-tests/lammps} --lmp "$(command -v lmp)" --plugin "$build/src/lammps/edgeframeplugin.so" \
    ${LAMMPS_TEST_ARGS:-} ${LAMMPS_TEST_K:+-k "$LAMMPS_TEST_K"} > "$OUT/lammps-gpu.log" 2>&1 || status=1
  tail -8 "$OUT/lammps-gpu.log"; echo "   $((SECONDS - t0)) s"
}

do_gate() {
  echo "== gate: tools/gate.py"
  # shellcheck disable=SC2086
  "$EDGEFRAME_PYTHON" tools/gate.py --bench "$build/bench/edgeframe_bench" --lmp "$(command -v lmp)" \
    --plugin "$build/src/lammps/edgeframeplugin.so" --out "$OUT/${GATE_OUT:-gate}" --budget "${GATE_BUDGET:-300}" \
    ${GATE_ARGS:-} 2>&1 | tee "$OUT/${GATE_OUT:-gate}.log" || status=1
}

do_profile() {
  echo "== profile: bench/edgeframe_bench, per kernel"
  { "$build/bench/edgeframe_bench" --shape L2 --cells 4 --reps 3 --precision fp32 --torch-profile
    "$build/bench/edgeframe_bench" --shape L3 --cells 4 --reps 2 --precision fp32 --torch-profile
    "$build/bench/edgeframe_bench" --shape L2 --cells 4 --reps 3 --precision tf32 --torch-profile
    "$EDGEFRAME_PYTHON" tools/roofline_probe.py; } > "$OUT/profile.log" 2>&1 || status=1
  cat "$OUT/profile.log"
  [[ -n ${NCU:-} ]] && do_ncu
}

do_memprofile() {
  echo "== memprofile: bench/edgeframe_bench --memory-profile, 512 atoms"
  local shape precision
  for shape in L2 L3; do
    for precision in fp32 tf32; do
      echo "-- $shape $precision"
      "$build/bench/edgeframe_bench" --shape "$shape" --cells 4 --reps 1 --precision "$precision" --memory-profile || status=1
    done
  done > "$OUT/memprofile.log" 2>&1
  cat "$OUT/memprofile.log"
}

do_ncu() {
  if command -v ncu > /dev/null; then
    # Hardware counters of the Kokkos kernels of one L2 step (edgeframe's kernels are all Kokkos
    # launches; torch's are not; one step has 52 of them, the first NCU_SKIP belong to the
    # warm-up step): speed of light, memory, occupancy, and where the warps stall (WarpStateStats,
    # SchedulerStats: what stops a kernel short of the copy bandwidth).
    echo "== profile: ncu on the Kokkos kernels of one L2 step (NCU_SKIP=${NCU_SKIP:-52}, NCU_LAUNCHES=${NCU_LAUNCHES:-52})"
    timeout "${NCU_TIMEOUT:-180}" ncu --clock-control none --kernel-name regex:cuda_parallel_launch \
      --launch-skip "${NCU_SKIP:-52}" --launch-count "${NCU_LAUNCHES:-52}" \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section WarpStateStats --section SchedulerStats \
      "$build/bench/edgeframe_bench" --shape L2 --cells 4 --reps 1 --warmup 1 --precision fp32 > "$OUT/ncu.log" 2>&1 || true
    xz -T0 -k "$OUT/ncu.log" && rm -f "$OUT/ncu.log"    # large; comes back as ncu.log.xz
    xzcat "$OUT/ncu.log.xz" | grep -cE "^  [A-Za-z].*\(" | sed 's/^/   kernels profiled: /'
  else
    echo "== ncu: not on this machine"
  fi
}

do_precision() {
  echo "== precision: shipped C potential, 4096 atoms, fp64 / fp32 / tf32 (-k on g 1 -sf kk)"
  local p plugin=$build/src/lammps/edgeframeplugin.so
  {
    for p in fp64 fp32 tf32; do
      lmp -k on g 1 -sf kk -in bench/in.forces_dump -var plugin "$plugin" -var precision "$p" \
        -var dump "/tmp/forces-$p.dump" -log none -screen "/tmp/precision-$p.log" || { echo "$p: lmp failed"; status=1; }
      echo "$p: $(grep -A1 -E '^ +Step' "/tmp/precision-$p.log" | tail -1)"
    done
    "$EDGEFRAME_PYTHON" - << 'PYEOF'
import numpy as np
def forces(p):
    return np.loadtxt(f"/tmp/forces-{p}.dump", skiprows=9)[:, 1:4]
ref = forces("fp64")
for p in ("fp32", "tf32"):
    d = np.abs(forces(p) - ref)
    print(f"{p} vs fp64: max |dF| {d.max():.3e} eV/A = {d.max() / np.abs(ref).max():.2e} of max |F| {np.abs(ref).max():.3f}; "
          f"r.m.s. dF {np.sqrt((d ** 2).mean()):.3e} eV/A")
PYEOF
    for p in fp32 tf32; do
      lmp -k on g 1 -sf kk -in examples/gpu/in.diamond-gpu -var plugin "$plugin" -var precision "$p" \
        -var steps "${PRECISION_STEPS:-400}" -log "/tmp/nve-$p.log" -screen none || { echo "$p NVE: lmp failed"; status=1; }
      echo "-- NVE $p (thermo: step temp pe etotal press)"
      sed -n '/^ *Step/,/^Loop time/p' "/tmp/nve-$p.log"
    done
  } > "$OUT/precision.log" 2>&1 || status=1
  cat "$OUT/precision.log"
}

do_example() {
  echo "== example: examples/gpu/in.diamond-gpu (-k on g 1 -sf kk)"
  lmp -k on g 1 -sf kk -in examples/gpu/in.diamond-gpu -var plugin "$build/src/lammps/edgeframeplugin.so" \
    -log "$OUT/log.diamond-gpu" -screen none || status=1
  grep -E "^Loop time|Performance|ERROR|edgeframe timing" "$OUT/log.diamond-gpu"
}

# benchab: the carried build's bench (OLD_BENCH, copied before `build` replaced it) against the
# new one, same call, same cases: L2 tf32, L3 fp32 and L2 fp32 at 512 atoms (per-kernel split),
# into $OUT/benchab.log.
do_benchab() {
  local new=$build/bench/edgeframe_bench shape precision
  echo "== benchab: $OLD_BENCH (carried build) vs $new"
  {
    for shape_precision in L2:tf32 L3:fp32 L2:fp32; do
      shape=${shape_precision%%:*} precision=${shape_precision##*:}
      echo "-- $shape $precision, old build"
      "${OLD_BENCH:?}" --shape "$shape" --cells 4 --reps 10 --precision "$precision" | grep -E "^  step|^  edgeframe::|LibTorch"
      echo "-- $shape $precision, new build"
      "$new" --shape "$shape" --cells 4 --reps 10 --precision "$precision" | grep -E "^  step|^  edgeframe::|LibTorch"
    done
  } > "$OUT/benchab.log" 2>&1 || status=1
  grep -E "^--|^  step \(" "$OUT/benchab.log"
}

do_exchange_ab() {
  echo "== exchange-ab: bench/gpu_exchange_ab.sh (needs two GPUs: $(nvidia-smi -L | wc -l) here)"
  # shellcheck disable=SC2086
  EDGEFRAME_PLUGIN="$build/src/lammps/edgeframeplugin.so" bench/gpu_exchange_ab.sh "$OUT/exchange-ab" \
    "${EXCHANGE_STEPS:-10}" ${EXCHANGE_VARIANTS:-} | tee "$OUT/exchange-ab.md" || status=1
  tar -C "$OUT" -cJf "$OUT/exchange-ab-logs.tar.xz" exchange-ab && rm -rf "$OUT/exchange-ab"
}

do_mpi() {
  echo "== mpi: bench/mpi_transports.sh (OpenMPI transport settings, two ranks)"
  bench/mpi_transports.sh /tmp/mpi-transports "${MPI_MAX_MB:-64}" 2>&1 | tee "$OUT/mpi.log" || status=1
  cp /tmp/mpi-transports/mpi-best.env "$OUT/mpi-best.env" 2>/dev/null
}

do_scaling() {
  echo "== scaling: bench/gpu_scaling.sh (needs two GPUs: $(nvidia-smi -L | wc -l) here)"
  if [[ -n ${SCALING_MPI_ENV:-} ]]; then
    # shellcheck disable=SC1090
    source "$SCALING_MPI_ENV"
    echo "   OpenMPI settings from $SCALING_MPI_ENV: $(env | grep '^OMPI_MCA_' | tr '\n' ' ')"
  fi
  mkdir -p "$OUT/scaling"
  command -v ompi_info > /dev/null && ompi_info --parsable --all 2>/dev/null | grep -E "mpi_built_with_cuda_support:value|ompi:version:full" | sed 's/^/   /'
  # Both GPUs' load and memory every 5 s: shows that the 2-rank runs use both cards.
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv -l 5 > "$OUT/scaling/nvidia-smi.csv" 2>&1 &
  local smi=$!
  EDGEFRAME_PLUGIN="$build/src/lammps/edgeframeplugin.so" bench/gpu_scaling.sh "$OUT/scaling" ${SCALING_ARGS:-} \
    | tee "$OUT/scaling.md"
  kill $smi 2>/dev/null
  local f
  for f in "$OUT"/scaling/log.*; do    # the per-case time split
    [[ $f == *.stdout ]] && continue
    echo "   ${f##*/log.}: $(grep -h "edgeframe timing detail" "$f" | sed 's/.*ranks): //')"
    grep -h "edgeframe exchange split" "$f" | sed 's/^/      /'    # reorder | bus copies | LAMMPS comm
  done
  # One file for all the logs (the device tool brings back at most 8 files).
  tar -C "$OUT" -cJf "$OUT/scaling-logs.tar.xz" scaling && rm -rf "$OUT/scaling"
  grep -q "| failed" "$OUT/scaling.md" && status=1
}

# lammps: Kokkos and LAMMPS with KOKKOS CUDA built here from the carried tarballs
# (.device/kokkos_5.0.2.orig.tar.gz, lammps-20260704-trimmed.tar.xz and its .sha256, made by
# scripts/pack_for_device.sh), resuming a build an earlier call on this warm machine stopped, for
# at most LAMMPS_BUDGET seconds (default 520; the whole build took 456 s on 16 cores); once
# complete the prefix goes into $OUT/deps-gpu.tar.xz (about 15 MB), which later calls carry as
# .device/deps-gpu.tar.xz. Cut short, the step fails and the steps after it are not run: call
# again within the 30 s the machine stays warm (bench/gpu-session.md).
do_lammps() {
  local t0=$SECONDS
  echo "== lammps: Kokkos + LAMMPS KOKKOS CUDA (at most ${LAMMPS_BUDGET:-520} s)"
  if ! PATH=/usr/local/cuda/bin:$PATH EDGEFRAME_TARBALLS=$repo/.device timeout "${LAMMPS_BUDGET:-520}" scripts/bootstrap.sh --gpu > "$OUT/lammps-build.log" 2>&1; then
    tail -5 "$OUT/lammps-build.log"
    echo "   not complete after $((SECONDS - t0)) s: run the step again on this warm machine (the build resumes)"
    return 1
  fi
  echo "   complete in $((SECONDS - t0)) s"
  (cd "$prefix" && tar cf - kokkos-5.0.2-cuda-hopper90 lammps-20260704-cuda-hopper90 \
     stamps/kokkos-5.0.2-cuda-hopper90 stamps/lammps-20260704-cuda-hopper90 | xz -T0 -6 > "$OUT/deps-gpu.tar.xz") || return 1
  ls -la "$OUT/deps-gpu.tar.xz"
  deps_env
}

# The lammps step makes the environment the other steps use, so it must come first.
want_lammps_step=0
for step in "$@"; do [[ $step == lammps ]] && want_lammps_step=1; done
if [[ $want_lammps_step == 1 && ${1:-} != lammps ]]; then
  echo "gpu_session: the lammps step must be the first step (the steps after it use its build)"; exit 2
fi
deps || exit 1
for step in "$@"; do
  case $step in
    lammps) do_lammps || exit 1 ;;
    build) do_build || exit 1 ;;
    test) do_test ;;
    gate) do_gate ;;
    profile) do_profile ;;
    example) do_example ;;
    precision) do_precision ;;
    scaling) do_scaling ;;
    mpi) do_mpi ;;
    exchange-ab) do_exchange_ab ;;
    ncu) do_ncu ;;
    memprofile) do_memprofile ;;
    benchab) do_benchab ;;
    *) echo "gpu_session: unknown step '$step' (valid: lammps build test gate profile ncu memprofile benchab example precision scaling mpi exchange-ab)"; exit 2 ;;
  esac
done
exit $status
