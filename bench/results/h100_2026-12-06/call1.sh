#!/bin/bash
# Where the split mode's tensor-core GEMM (kokkos/tensor_core_gemm.hpp) loses its time: Nsight
# Compute on one launch of each form (3xTF32, kTerms 3; plain TF32 through the same loop, kTerms
# 1) at one SO(2) shape (so2_1 m1 fwd, K 1024, N 512, M 65536), the microbenchmark's table at
# the full M for the time, and the kernels' SASS instruction mix. About 120 s.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call1.sh
set -u
T0=$SECONDS
R=/tmp/ncu1/r    # outside $OUT: only 8 files come back, so they travel as one tarball
rm -rf /tmp/ncu1; mkdir -p "$R"
pack() { tar -C /tmp/ncu1 -cJf "$OUT/results.tar.xz" r; }
nvidia-smi --query-gpu=name,memory.total,clocks.sm,clocks.max.sm --format=csv | tee "$R/gpu.txt"
nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -Ikokkos bench/tensor_core_gemm_bench.cu -lcublas -o /tmp/tcgemm \
  -Xptxas -v > "$R/build.log" 2>&1 || { cat "$R/build.log"; exit 1; }
grep -A3 "gemm_kernel" "$R/build.log" | grep -E "registers|spill"
for t in 1 3; do
  f=_ZN9edgeframe2kk2tc11gemm_kernelILi${t}EEEvNS1_8GemmArgsE
  cuobjdump --dump-sass -fun "$f" /tmp/tcgemm > "$R/sass-$t.txt" 2>&1
  echo "SASS mix, kTerms $t:"; grep -oE '^\s+/\*[0-9a-f]{4}\*/\s+(@!?P[0-9T] )?[A-Z0-9]+' "$R/sass-$t.txt" \
    | awk '{print $NF}' | sort | uniq -c | sort -rn | head -12 | tr '\n' ' '; echo
done
timeout 120 /tmp/tcgemm --reps 20 > "$R/gemm-bench.txt" 2>&1; echo "bench rc $?"; cat "$R/gemm-bench.txt"
pack
# The second shape of the table is so2_1 m1 fwd. launch-skip counts launches of the kernel that -k
# matches: per shape, one for the accuracy check and --reps timed ones; so 4 = its first timed one.
for t in 3 1; do
  timeout 200 ncu --clock-control none --set full --import-source yes \
    --kernel-name-base mangled -k "regex:gemm_kernelILi${t}E" --launch-skip 4 --launch-count 1 \
    -o "$R/ncu-$t" /tmp/tcgemm --m 65536 --reps 2 > "$R/ncu-$t.log" 2>&1
  echo "ncu kTerms $t rc $? at $((SECONDS - T0)) s"; tail -3 "$R/ncu-$t.log"
  ncu --import "$R/ncu-$t.ncu-rep" --page details --print-units base > "$R/ncu-$t-details.txt" 2>&1
  grep -E "Duration|SM Frequency|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|Executed Ipc A|Achieved Occupancy|Registers Per|Block Limit|L1/TEX Hit|Bank|Stall|No Eligible|Warp Cycles Per Issued|One or More Eligible|Theoretical Occupancy|Tensor|pipe" \
    "$R/ncu-$t-details.txt" | head -40
  ncu --import "$R/ncu-$t.ncu-rep" --page raw --csv \
    --metrics smsp__average_warp_latency_issue_stalled_*,smsp__pcsamp_warps_issue_stalled_*,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    > "$R/ncu-$t-raw.csv" 2>&1
  pack
done
echo "total $((SECONDS - T0)) s"
