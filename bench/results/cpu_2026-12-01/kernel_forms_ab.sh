#!/bin/bash
# CPU A/B of the kernel forms: host form (b-engine) vs device form on the host (b-ab), same
# tree otherwise; ABAB, 64-atom L2 and L3 (cells 2), fp64 and fp32, 2 OpenMP threads.
export OMP_PROC_BIND=spread OMP_PLACES=threads OMP_NUM_THREADS=2
for round in 1 2 3; do
  for shape in L2 L3; do
    for prec in fp32 fp64; do
      for form in host device; do
        b=/tmp/b-engine/bench/edgeframe_bench; [[ $form == device ]] && b=/tmp/b-ab/bench/edgeframe_bench
        out=$($b --shape $shape --cells 2 --reps 3 --precision $prec 2>&1)
        step=$(echo "$out" | grep -m1 "^  step (energy" | awk '{print $4}')
        k=$(echo "$out" | grep -E "edge_frame_pack|unrotate_aggregate" | awk '{s+=$2} END {print s}')
        echo "round $round $shape $prec $form step_s $step edge_frame_kernels_ms $k"
      done
    done
  done
done
