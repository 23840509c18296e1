#!/bin/bash
# The wgmma 3xTF32 prototype (bench/wgmma/) against the engine's mma.sync kernel and cuBLAS:
# build for sm_90a, a small run (M 4096, incl. an odd 100 x 36 shape) for correctness, then the
# full microbenchmark; compute-sanitizer on the small run if it fails. About 90 s.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call4.sh
set -u
T0=$SECONDS
R=/tmp/call4/r
rm -rf /tmp/call4; mkdir -p "$R"
pack() { tar -C /tmp/call4 -cJf "$OUT/results.tar.xz" r; }
nvidia-smi --query-gpu=name,memory.total --format=csv
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Ikokkos -Ibench/wgmma bench/wgmma/wgmma_tf32x3_bench.cu \
  -lcublas -o /tmp/wg -Xptxas -v > "$R/build.log" 2>&1 || { tail -20 "$R/build.log"; pack; exit 1; }
grep -A2 "gemm_kernel" "$R/build.log" | grep -E "Used|spill"
cuobjdump --dump-sass /tmp/wg 2>/dev/null | grep -c "HGMMA" | sed 's/^/HGMMA instructions in the binary: /'
timeout 60 /tmp/wg --m 4096 --reps 2 > "$R/small.txt" 2>&1; rc=$?
echo "small rc $rc at $((SECONDS - T0)) s"; cat "$R/small.txt"
if [[ $rc != 0 ]]; then
  timeout 120 compute-sanitizer --print-limit 5 /tmp/wg --m 1024 --reps 1 > "$R/sanitizer.txt" 2>&1
  head -40 "$R/sanitizer.txt"; pack; exit 1
fi
timeout 120 /tmp/wg --reps 20 > "$R/full.txt" 2>&1; echo "full rc $? at $((SECONDS - T0)) s"; cat "$R/full.txt"
pack
echo "total $((SECONDS - T0)) s"
