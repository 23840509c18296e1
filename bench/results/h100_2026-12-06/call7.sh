#!/bin/bash
# The wgmma kernel's tilings (kokkos/tensor_core_gemm_wgmma.hpp, Tiling<warpgroups, stages>):
# 2 x 3 (the engine's), 2 x 4, 3 x 3, 3 x 2 in the microbenchmark, then Nsight Compute on one
# launch of 2 x 3 and of 3 x 3 at so2_1 m1 fwd (K 1024, N 512, M 65536). About 150 s.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call7.sh
set -u
T0=$SECONDS
R=/tmp/call7/r
rm -rf /tmp/call7; mkdir -p "$R"
pack() { tar -C /tmp/call7 -cJf "$OUT/results.tar.xz" r; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -lineinfo -Ikokkos -Ibench bench/wgmma/wgmma_tf32x3_bench.cu \
  -lcublas -o /tmp/wg -Xptxas -v > "$R/build.log" 2>&1 || { tail -20 "$R/build.log"; pack; exit 1; }
grep -A2 "tcw11gemm_kernel" "$R/build.log" | grep -E "Compiling|Used|spill"
timeout 60 /tmp/wg --m 4096 --reps 2 > "$R/small.txt" 2>&1; echo "small rc $? at $((SECONDS - T0)) s"; cat "$R/small.txt"
timeout 150 /tmp/wg --reps 20 > "$R/full.txt" 2>&1; echo "full rc $? at $((SECONDS - T0)) s"; cat "$R/full.txt"
pack
# Launches of one tiling's kernel per shape: 1 for the accuracy check + reps timed ones (+ a warm-up
# in median_ms if any); the second shape's first timed launch is past the first shape's 3 (reps 2).
for t in "2ELi3" "3ELi3"; do
  timeout 120 ncu --clock-control none --set full --import-source yes --kernel-name-base mangled \
    -k "regex:gemm_kernelILi${t}E" --launch-skip 4 --launch-count 1 -o "$R/ncu-$t" /tmp/wg --m 65536 --reps 2 \
    > "$R/ncu-$t.log" 2>&1
  echo "ncu $t rc $? at $((SECONDS - T0)) s"; tail -2 "$R/ncu-$t.log"
  ncu --import "$R/ncu-$t.ncu-rep" --page details --print-units base > "$R/ncu-$t-details.txt" 2>&1
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Cache Throughput|Issue Slots Busy|Executed Ipc A|Achieved Occupancy|Registers Per|Bank|No Eligible|Warp Cycles Per Issued|One or More Eligible|Shared Memory" \
    "$R/ncu-$t-details.txt" | head -30
  ncu --import "$R/ncu-$t.ncu-rep" --page raw --csv \
    --metrics smsp__average_warp_latency_issue_stalled_barrier,smsp__average_warp_latency_issue_stalled_long_scoreboard,smsp__average_warp_latency_issue_stalled_short_scoreboard,smsp__average_warp_latency_issue_stalled_wait,smsp__average_warp_latency_issue_stalled_math_pipe_throttle,smsp__average_warp_latency_issue_stalled_mio_throttle,smsp__average_warp_latency_issue_stalled_lg_throttle,smsp__average_warp_latency_issue_stalled_membar,smsp__average_warp_latency_issue_stalled_dispatch_stall,smsp__average_warp_latency_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_sleeping,smsp__pcsamp_warps_issue_stalled_misc,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,lts__t_sectors.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed \
    > "$R/ncu-$t-raw.csv" 2>&1
  pack
done
echo "total $((SECONDS - T0)) s"
