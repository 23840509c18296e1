#!/bin/bash
# The whole measurement of the tf32x3 tensor-core kernel in one device call (no machine could be
# started when it was written: not yet run). The tf32x3 mode does not take the kernel in the
# committed tree; the python block below (on the device's copy only) makes it take it unless
# EDGEFRAME_AB_TF32X3_TORCH is set, so that one build times both. This tree built
# (bench, units) and its GPU units run; the GEMM against cuBLAS (bench/tensor_core_gemm_bench.cu);
# the step in tf32x3 with the kernel and with the split from torch ops, tf32 and fp64, diamond
# 512 and bcc Cu 4394 (random UMA-S-shape v2). After it: commit the wiring without the switch.
#   OUT=$OUT bash bench/results/h200_2026-12-05d/call2.sh
set -u
T0=$SECONDS
R=/tmp/call2/r    # outside $OUT: only 8 files come back, so they travel as one tarball
rm -rf /tmp/call2; mkdir -p "$R"
nvidia-smi --query-gpu=name,memory.total --format=csv
pack() { tar -C /tmp/call2 -cJf "$OUT/results.tar.xz" r; }
# The wiring and the measurement switch, on the device's copy only.
python3 - << 'PY' || { echo "wiring failed"; exit 1; }
p = "src/engine/gemm.cpp"
s = open(p).read()
head = "void tf32x3_out(Tensor& out, const Tensor& a, const Tensor& b, const Tensor& bias) {\n"
assert head in s and "ab_torch_split" not in s
s = s.replace(head, head + '  static const bool ab_torch_split = std::getenv("EDGEFRAME_AB_TF32X3_TORCH") != nullptr;\n'
              "  if (!ab_torch_split && gemm_tf32x3_tensor_cores(out, a, b, bias)) return;\n", 1)
open(p, "w").write(s.replace("#include <cstdint>\n", "#include <cstdint>\n#include <cstdlib>\n", 1))
PY
nvcc -O3 -std=c++17 -arch=sm_90 -Ikokkos bench/tensor_core_gemm_bench.cu -lcublas -o /tmp/tcgemm > "$R/gemm-build.log" 2>&1 &
OUT=$R NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench edgeframe_unit_tests" timeout 330 \
  scripts/gpu_session.sh build test > "$R/build.log" 2>&1
echo "build and units rc $? at $((SECONDS - T0)) s"
grep -E "built in|error|PASSED|FAILED|SKIPPED" "$R/build.log" | head -20
grep -E "FAILED|tensor-core|tf32x3" "$R/unit-gpu.log" | head -20
pack
wait
timeout 80 /tmp/tcgemm --reps 20 > "$R/gemm-bench.txt" 2>&1
echo "gemm bench rc $? at $((SECONDS - T0)) s"; cat "$R/gemm-bench.txt"
pack
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
pot=/tmp/umas.safetensors cases=/tmp/cases
python3 bench/v2_random_potential.py $pot > "$R/potential.log" 2>&1
python3 bench/v2_cases.py --potential $pot --out $cases --cases diamond512,bcc4394 > "$R/cases.log" 2>&1
one() {  # label env precision case reps
  ((SECONDS - T0 < 470)) || { echo "skipped $1: time"; return; }
  env $2 timeout 60 build-gpu/bench/edgeframe_bench --case $cases/$4.case --potential $pot --precision $3 \
    --reps $5 --warmup 3 --forces-out /tmp/f-$1 > "$R/$1.log" 2>&1
  echo "$1 rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"peak_bytes": [0-9]*' "$R/$1.log" | tr '\n' ' ')"
}
for c in diamond512 bcc4394; do
  one $c-tf32x3-torch EDGEFRAME_AB_TF32X3_TORCH=1 tf32x3 $c 10
  one $c-tf32x3-kernel X=1 tf32x3 $c 20
  one $c-tf32 X=1 tf32 $c 20
  one $c-fp64 X=1 fp64 $c 2
done
python3 - << 'PY' | tee "$R/forces-vs-fp64.txt"
import os
import numpy as np
for c in ("diamond512", "bcc4394"):
    ref = f"/tmp/f-{c}-fp64"
    if not os.path.exists(ref):
        print(c, "no fp64 forces"); continue
    r = np.fromfile(ref, dtype="<f8")
    for v in ("tf32x3-torch", "tf32x3-kernel", "tf32"):
        f = f"/tmp/f-{c}-{v}"
        if os.path.exists(f):
            x = np.fromfile(f, dtype="<f8")
            print(f"{c} {v}: max|dF| / max|F| against fp64 {np.abs(x - r).max() / np.abs(r).max():.2e}")
PY
pack
echo "total $((SECONDS - T0)) s"
