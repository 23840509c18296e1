#!/bin/bash
# Session i, call 1 (two H200s): carbon v8 training, one run per card, beside the GPU units and
# the test_ghost_exchange tests not yet run on a GPU with CUDA IPC as the default. Timings: none.
set -u
mkdir -p $OUT/r
(OUT=$OUT/r/t BUDGET=470 RUNS="C-cont-e20-lr2 C-cont-e10-lr2" INIT_C=potentials/C-diamond.safetensors \
   bash tools/train/gpu_production.sh > $OUT/r/train-call1.log 2>&1) &
tp=$!
OUT=$OUT BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" \
  LAMMPS_TESTS=tests/lammps/test_ghost_exchange.py LAMMPS_TEST_ARGS=-rA \
  LAMMPS_TEST_K="not (direct_mpi or cuda_ipc or relays or null_types or same_rank or kokkos_device or timing_detail)" \
  LAMMPS_TEST_TIMEOUT=240 scripts/gpu_session.sh build test
wait $tp
tail -40 $OUT/r/train-call1.log
cp $OUT/r/t/*.safetensors $OUT/ 2>/dev/null
mv $OUT/*.log $OUT/r/ 2>/dev/null
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $OUT/r
ls -la $OUT
