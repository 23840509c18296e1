#!/usr/bin/env bash
# H200 call 3 (warm): after the fix of gemm.cpp (the 3xTF32 sum in a contiguous tensor), the
# units again and tf32x3 on the three cases of call 1 (its fp64 forces still in /tmp).
NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_unit_tests edgeframe_bench" timeout 300 scripts/gpu_session.sh build > $OUT/build2.log 2>&1
echo "build rc $?"
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
timeout 100 build-gpu/tests/edgeframe_unit_tests --gtest_brief=1 --gtest_filter='Gemm*:*TensorCore*:*Tf32*' 2>&1 | grep -v "so2_" | tail -12
b=build-gpu/bench/edgeframe_bench
for c in "C-diamond512 /tmp/ccases/diamond512.case potentials/C-diamond-v2.safetensors" \
         "umas-diamond512 /tmp/cases/diamond512.case /tmp/umas.safetensors" \
         "umas-bcc4394 /tmp/cases/bcc4394.case /tmp/umas.safetensors"; do
  set -- $c
  timeout 60 $b --case $2 --potential $3 --precision tf32x3 --reps 20 --warmup 2 --forces-out /tmp/f-$1-tf32x3 \
    > $OUT/bench-$1-tf32x3-fixed.log 2>&1
  echo "$1 tf32x3 rc $? $(grep -o '"median_s": [0-9.e+-]*\|"peak_bytes": [0-9]*' $OUT/bench-$1-tf32x3-fixed.log | tr '\n' ' ')"
  python3 -c "
import numpy as np; l='$1'
r=np.fromfile(f'/tmp/f-{l}-fp64','<f8'); f=np.fromfile(f'/tmp/f-{l}-tf32x3','<f8'); print(l, 'tf32x3 max|dF|/max|F|', abs(f-r).max()/abs(r).max())"
done
