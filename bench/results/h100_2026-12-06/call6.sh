#!/bin/bash
# The wgmma kernel in the engine (wgmma-engine.patch: kokkos/tensor_core_gemm_wgmma.hpp, its
# sm_90a translation unit src/engine/gemm_wgmma.cu built by CMake's CUDA language, the tf32x3
# mode taking it on compute capability 9.0, the unit test running both kernels), applied to this
# copy of the tree: GPU units, the microbenchmark, the step in tf32x3 and tf32 with forces
# against fp64. About 320 s on a cold machine; the steps are skipped past 520 s.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call6.sh     (from a checkout without the patch)
set -u
T0=$SECONDS
D=bench/results/h100_2026-12-06
R=/tmp/call6/r    # outside $OUT: only 8 files come back, so they travel as one tarball
rm -rf /tmp/call6; mkdir -p "$R"
pack() { tar -C /tmp/call6 -cJf "$OUT/results.tar.xz" r; }
nvidia-smi --query-gpu=name,memory.total --format=csv
git apply $D/wgmma-engine.patch > "$R/patch.log" 2>&1 || { echo "the patch did not apply"; cat "$R/patch.log"; exit 1; }
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ikokkos bench/wgmma/wgmma_tf32x3_bench.cu -lcublas \
  -o /tmp/wg > "$R/gemm-build.log" 2>&1 &
OUT=$R NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests" timeout 330 \
  scripts/gpu_session.sh build test > "$R/build.log" 2>&1
echo "build and units rc $? at $((SECONDS - T0)) s"
grep -E "built in|error|PASSED|FAILED|SKIPPED" "$R/build.log" | head -20
grep -E "FAILED|tensor-core|tf32x3" "$R/unit-gpu.log" | head -20
pack
wait
timeout 60 /tmp/wg --reps 20 > "$R/gemm-bench.txt" 2>&1; echo "gemm bench rc $?"; cat "$R/gemm-bench.txt"
pack
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
pot=/tmp/umas.safetensors cases=/tmp/cases
python3 bench/v2_random_potential.py $pot > "$R/potential.log" 2>&1
python3 bench/v2_cases.py --potential $pot --out $cases --cases diamond512,bcc4394 > "$R/cases.log" 2>&1
one() {  # label precision case reps
  ((SECONDS - T0 < 520)) || { echo "skipped $1: time"; return; }
  timeout 60 build-gpu/bench/edgeframe_bench --case $cases/$3.case --potential $pot --precision $2 \
    --reps $4 --warmup 3 --forces-out /tmp/f-$1 > "$R/$1.log" 2>&1
  echo "$1 rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"peak_bytes": [0-9]*' "$R/$1.log" | tr '\n' ' ')"
}
for c in diamond512 bcc4394; do
  one $c-tf32x3 tf32x3 $c 20
  one $c-tf32 tf32 $c 20
  one $c-fp64 fp64 $c 2
done
python3 - << 'PY' | tee "$R/forces-vs-fp64.txt"
import os
import numpy as np
for c in ("diamond512", "bcc4394"):
    ref = f"/tmp/f-{c}-fp64"
    if not os.path.exists(ref):
        print(c, "no fp64 forces"); continue
    r = np.fromfile(ref, dtype="<f8")
    for v in ("tf32x3", "tf32"):
        f = f"/tmp/f-{c}-{v}"
        if os.path.exists(f):
            x = np.fromfile(f, dtype="<f8")
            print(f"{c} {v}: max|dF| / max|F| against fp64 {np.abs(x - r).max() / np.abs(r).max():.2e}")
PY
pack
echo "total $((SECONDS - T0)) s"
