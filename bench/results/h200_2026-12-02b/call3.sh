#!/bin/bash
# Call 3 (one H200): call 2 stopped at a compile error of the plugin (fmt::print, not declared
# in the CUDA build; now fputs of fmt::format). Plugin and Python module built together, then
# the deviation, unit and Python-calculator tests with the CUDA plugin (plain style on the GPU,
# /kk under -k on g 1 -sf kk) and the module on the CUDA engine.
set -u
T0=$SECONDS
R=$OUT/r; mkdir -p $R
site=/tmp/pysite; mkdir -p $site
python3 -m pip install -q --no-index --no-deps --target $site .device/py-wheels/*.whl > $R/pip.log 2>&1
export PYTHONPATH=$site
pyb=$(python3 -m pybind11 --cmakedir)
OUT=$R BUILD_TARGETS="edgeframeplugin edgeframe_python" NO_STATE=1 \
  CMAKE_EXTRA="-DEDGEFRAME_BUILD_PYTHON=ON -Dpybind11_DIR=$pyb -DPython_EXECUTABLE=$(command -v python3)" \
  LAMMPS_TESTS="tests/lammps/test_model_deviation.py tests/lammps/test_units.py tests/lammps/test_python_calculator.py" \
  LAMMPS_TEST_ARGS="--python-dir build-gpu/python -rA" LAMMPS_TEST_TIMEOUT=300 \
  timeout 560 scripts/gpu_session.sh build test > $R/build-test.log 2>&1
echo "build+test rc $? at $((SECONDS - T0)) s"; tail -6 $R/build-test.log
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)" $R/lammps-gpu.log | sed 's/ - .*//' | cut -c1-110
tar -C $OUT -cJf $OUT/results.tar.xz r && rm -rf $R
echo "total $((SECONDS - T0)) s"
