#!/bin/bash
# Call 4 (one H200): call 3's one failure was the test's own setup (/kk on two GPU ranks needs
# -pk kokkos newton on neigh half, which the test now passes); the deviation tests again.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
site=/tmp/pysite; mkdir -p $site
python3 -m pip install -q --no-index --no-deps --target $site .device/py-wheels/*.whl > $R/pip.log 2>&1
export PYTHONPATH=$site
pyb=$(python3 -m pybind11 --cmakedir)
OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_python" NO_STATE=1 \
  CMAKE_EXTRA="-DEDGEFRAME_BUILD_PYTHON=ON -Dpybind11_DIR=$pyb -DPython_EXECUTABLE=$(command -v python3)" \
  LAMMPS_TESTS="tests/lammps/test_model_deviation.py" \
  LAMMPS_TEST_ARGS="--python-dir build-gpu/python -rA" LAMMPS_TEST_TIMEOUT=300 \
  timeout 400 scripts/gpu_session.sh build test > $R/build-test.log 2>&1
echo "build+test rc $? at $((SECONDS - T0)) s"; tail -6 $R/build-test.log
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)" $R/lammps-gpu.log | sed 's/ - .*//' | cut -c1-110
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
