#!/bin/bash
# call2.sh's "head" microbenchmark was built while the same script patched kokkos/ for the step,
# so it measured p2 twice (218 registers, as p2). The committed kernel and p2 again, built one
# after the other from separate header copies, alternated twice. About 90 s.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call3.sh
set -u
T0=$SECONDS
D=bench/results/h100_2026-12-06
R=/tmp/call3/r
rm -rf /tmp/call3 /tmp/hdr-head /tmp/hdr-p2; mkdir -p "$R" /tmp/hdr-head /tmp/hdr-p2
cp kokkos/tensor_core_gemm.hpp /tmp/hdr-head/ && cp kokkos/tensor_core_gemm.hpp /tmp/hdr-p2/ \
  && patch -s /tmp/hdr-p2/tensor_core_gemm.hpp < $D/split-p2.patch || { echo "patch failed"; exit 1; }
nvidia-smi --query-gpu=name,memory.total --format=csv
for v in head p2; do
  nvcc -O3 -std=c++17 -arch=sm_90 -I/tmp/hdr-$v bench/tensor_core_gemm_bench.cu -lcublas -o /tmp/tcgemm-$v \
    -Xptxas -v > "$R/gemm-build-$v.log" 2>&1 &
done
wait
for v in head p2; do grep -A2 "Function properties.*gemm_kernel" "$R/gemm-build-$v.log" | grep Used | tr '\n' ' '; echo " ($v)"; done
for v in head p2 head p2; do
  timeout 60 /tmp/tcgemm-$v --reps 20 > "$R/gemm-bench-$v-$SECONDS.txt" 2>&1
  echo "gemm bench $v rc $? at $((SECONDS - T0)) s"; cut -c1-150 "$R"/gemm-bench-$v-*.txt | tail -12
done
tar -C /tmp/call3 -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
