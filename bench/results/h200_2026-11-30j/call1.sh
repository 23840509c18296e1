#!/bin/bash
# Session j, call 1 (two H200s): carbon v9 training from v8's file, one run per card, beside
# the GPU build, the GPU units (with the memory test), the memory profile (memory only) and the
# 21 test_ghost_exchange tests not yet run on a GPU with CUDA IPC as the default. Timings: none.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
(OUT=$R/t BUDGET=470 RUNS="C-cont-e10-lr2 C-cont-e5-lr2" INIT_C=potentials/C-diamond.safetensors \
   bash tools/train/gpu_production.sh > $R/train-call1.log 2>&1) &
tp=$!
OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" \
  LAMMPS_TESTS=tests/lammps/test_ghost_exchange.py::test_bad_self_swaps_setting_is_an_error \
  scripts/gpu_session.sh build test memprofile
mv $R/build-gpu-state.tar.xz $OUT/ 2>/dev/null
left=$((545 - (SECONDS - T0)))
echo "== $left s left for the remaining test_ghost_exchange tests"
if [ $left -gt 30 ]; then
  OUT=$R LAMMPS_TESTS=tests/lammps/test_ghost_exchange.py LAMMPS_TEST_ARGS=-rA LAMMPS_TEST_TIMEOUT=$left \
    LAMMPS_TEST_K="not (direct_mpi or cuda_ipc or relays or null_types or same_rank or kokkos_device or timing_detail or test_exchange_matches_reference_and_shell or test_exchange_fp32_matches_reference)" \
    BUILD_TARGETS="edgeframeplugin edgeframe_bench" scripts/gpu_session.sh test
fi
wait $tp
tail -30 $R/train-call1.log
cp $R/t/*.safetensors $OUT/ 2>/dev/null
cp $R/t/summary.txt $OUT/train-summary.txt 2>/dev/null
rm -f $R/t/*.safetensors
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
ls -la $OUT
