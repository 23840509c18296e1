#!/bin/bash
# Call 2 (one H200): edgeframe with the CUDA plugin from call 1's LAMMPS; the LAMMPS-level tests
# of issue #27 on the GPU (model deviation and unit styles through the plain style on the GPU and
# /kk with -k on g 1 -sf kk); then the Python module on the CUDA engine and its calculator tests
# against the CUDA plugin (Python headers permitting).
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
site=/tmp/pysite; mkdir -p $site
python3 -m pip install -q --no-index --no-deps --target $site .device/py-wheels/*.whl > $R/pip.log 2>&1
export PYTHONPATH=$site
OUT=$R BUILD_TARGETS="edgeframeplugin" NO_STATE=1 \
  LAMMPS_TESTS="tests/lammps/test_model_deviation.py tests/lammps/test_units.py" LAMMPS_TEST_TIMEOUT=200 \
  timeout 420 scripts/gpu_session.sh build test > $R/build-test.log 2>&1
echo "build+test rc $? at $((SECONDS - T0)) s"; tail -14 $R/build-test.log
left=$((570 - (SECONDS - T0)))
if [[ $left -gt 60 ]]; then
  source "$(EDGEFRAME_PYTHON=python3 scripts/bootstrap.sh --gpu --print-env)"
  pyb=$(python3 -m pybind11 --cmakedir)
  (cmake -S . -B build-gpu -DEDGEFRAME_BUILD_PYTHON=ON -Dpybind11_DIR=$pyb -DPython_EXECUTABLE=$(command -v python3) \
     && timeout $((left - 40)) cmake --build build-gpu --target edgeframe_python -j 16) > $R/python-build.log 2>&1
  echo "python module rc $? at $((SECONDS - T0)) s"; tail -3 $R/python-build.log
  left=$((575 - (SECONDS - T0)))
  if [[ -d build-gpu/python/edgeframe && $left -gt 20 ]]; then
    timeout $((left - 10)) python3 -m pytest -q -p no:cacheprovider tests/lammps/test_python_calculator.py -rA \
      --lmp "$(command -v lmp)" --plugin build-gpu/src/lammps/edgeframeplugin.so --python-dir build-gpu/python > $R/python-tests.log 2>&1
    echo "python tests rc $? at $((SECONDS - T0)) s"; grep -E "PASSED|FAILED|ERROR|SKIPPED|passed|failed" $R/python-tests.log | tail -14
  fi
fi
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
