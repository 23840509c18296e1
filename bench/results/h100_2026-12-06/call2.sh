#!/bin/bash
# The split mode's GEMM with cheaper operand splits (split-p1.patch: the TF32 head by two integer
# operations instead of cvt.rna's four, the tail handed over unrounded for the tensor cores to
# truncate) and, on top, the three products summed per 16 k's instead of 8 (split-p2.patch: half
# the fp32 adds). call1's ncu: both forms issue 2.18 instructions per cycle at 2 warps per
# scheduler, 7.2 instructions per mma in the 3xTF32 form, of which the splits are about 60 %.
# The committed kernel's microbenchmark, p1's and p2's, in one run; then p2 applied to this copy
# of the tree: GPU units, the step in tf32x3 and tf32 with forces against fp64. About 300 s.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call2.sh
set -u
T0=$SECONDS
D=bench/results/h100_2026-12-06
R=/tmp/call2/r    # outside $OUT: only 8 files come back, so they travel as one tarball
rm -rf /tmp/call2; mkdir -p "$R"
pack() { tar -C /tmp/call2 -cJf "$OUT/results.tar.xz" r; }
nvidia-smi --query-gpu=name,memory.total --format=csv
for v in p1 p2; do
  mkdir -p /tmp/hdr-$v && cp kokkos/tensor_core_gemm.hpp /tmp/hdr-$v/ \
    && patch -s /tmp/hdr-$v/tensor_core_gemm.hpp < $D/split-$v.patch || { echo "$v: patch failed"; exit 1; }
done
build_bench() {  # name include-dir
  nvcc -O3 -std=c++17 -arch=sm_90 -I$2 -Ikokkos bench/tensor_core_gemm_bench.cu -lcublas -o /tmp/tcgemm-$1 \
    -Xptxas -v > "$R/gemm-build-$1.log" 2>&1
}
build_bench head kokkos & build_bench p1 /tmp/hdr-p1 & build_bench p2 /tmp/hdr-p2 &
git apply $D/split-p2.patch > "$R/patch.log" 2>&1 || { echo "p2 did not apply to the tree"; cat "$R/patch.log"; exit 1; }
OUT=$R NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests" timeout 300 \
  scripts/gpu_session.sh build test > "$R/build.log" 2>&1
echo "build and units (p2) rc $? at $((SECONDS - T0)) s"
grep -E "built in|error|PASSED|FAILED|SKIPPED" "$R/build.log" | head -20
grep -E "FAILED|Tf32x3|tf32x3" "$R/unit-gpu.log" | head -20
wait
for v in head p1 p2; do grep -A2 "Function properties.*gemm_kernel" "$R/gemm-build-$v.log" | grep Used | tr '\n' ' '; echo " ($v)"; done
pack
for v in head p1 p2 head; do
  timeout 60 /tmp/tcgemm-$v --reps 20 > "$R/gemm-bench-$v.txt" 2>&1
  echo "gemm bench $v rc $? at $((SECONDS - T0)) s"; cut -c1-150 "$R/gemm-bench-$v.txt"
done
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
