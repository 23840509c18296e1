#!/usr/bin/env bash
# H200 call 2 (warm after call 1): the GoogleTest units of the precision modes on the GPU.
NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_unit_tests" timeout 420 scripts/gpu_session.sh build > $OUT/build-units.log 2>&1
echo "build rc $?"
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
timeout 120 build-gpu/tests/edgeframe_unit_tests --gtest_brief=1 --gtest_filter='Gemm*:*TensorCore*:*Tf32*' 2>&1 | grep -v "so2_"
# then: python3 bench/results/h200_2026-12-03b/split_diag.py (twice: before and after its last
# variant was appended), output in split_diag.txt
