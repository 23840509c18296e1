#!/bin/bash
# The wgmma kernel with a shared-memory barrier pipeline (gemm_kernel_mb: warp 0 issues bulk
# copies, every warp waits only for its stage's barrier) against the block-wide barrier per k tile
# (gemm_kernel), tilings 2 x 3, 3 x 3 and (mb) 2 x 4: correctness at M 4096 (compute-sanitizer if
# it fails), the microbenchmark, Nsight Compute on one launch of 3 x 3 mb. About 60 s.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call8.sh
set -u
T0=$SECONDS
R=/tmp/call8/r
rm -rf /tmp/call8; mkdir -p "$R"
pack() { tar -C /tmp/call8 -cJf "$OUT/results.tar.xz" r; }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -lineinfo -Ikokkos -Ibench bench/wgmma/wgmma_tf32x3_bench.cu \
  -lcublas -o /tmp/wg -Xptxas -v > "$R/build.log" 2>&1 || { tail -20 "$R/build.log"; pack; exit 1; }
timeout 60 /tmp/wg --m 4096 --reps 2 > "$R/small.txt" 2>&1; rc=$?
echo "small rc $rc at $((SECONDS - T0)) s"; cat "$R/small.txt"
if [[ $rc != 0 ]]; then
  timeout 120 compute-sanitizer --print-limit 5 /tmp/wg --m 1024 --reps 1 > "$R/sanitizer.txt" 2>&1
  head -40 "$R/sanitizer.txt"; pack; exit 1
fi
timeout 150 /tmp/wg --reps 20 > "$R/full.txt" 2>&1; echo "full rc $? at $((SECONDS - T0)) s"; cat "$R/full.txt"
pack
t=mbILi3ELi3
timeout 120 ncu --clock-control none --set full --import-source yes --kernel-name-base mangled \
  -k "regex:gemm_kernel_${t}E" --launch-skip 4 --launch-count 1 -o "$R/ncu-$t" /tmp/wg --m 65536 --reps 2 \
  > "$R/ncu-$t.log" 2>&1
echo "ncu $t rc $? at $((SECONDS - T0)) s"; tail -2 "$R/ncu-$t.log"
ncu --import "$R/ncu-$t.ncu-rep" --page details --print-units base > "$R/ncu-$t-details.txt" 2>&1
grep -E "Duration|Compute \(SM\) Throughput|L2 Cache Throughput|Issue Slots Busy|Executed Ipc A|Achieved Occupancy|No Eligible|Warp Cycles Per Issued" \
  "$R/ncu-$t-details.txt" | head -12
ncu --import "$R/ncu-$t.ncu-rep" --page raw --csv \
  --metrics smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_sleeping,smsp__pcsamp_warps_issue_stalled_branch_resolving,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_lg_throttle,smsp__pcsamp_warps_issue_stalled_imc_miss,smsp__pcsamp_warps_issue_stalled_drain,smsp__pcsamp_warps_issue_stalled_misc,smsp__pcsamp_warps_issue_stalled_tex_throttle \
  > "$R/ncu-$t-raw.csv" 2>&1
pack
echo "total $((SECONDS - T0)) s"
