#!/bin/bash
# NVE in every precision on the GPU (issue 26 item 3): the engine's Python module built with
# pybind11 from the carried wheel (.device/py-wheels), then bench/nve_precision.py on a 512-atom
# diamond from the perfect lattice at 600 K, dt 0.5 fs: the shipped carbon potential
# (C-diamond-v2) for 1000 steps and a random UMA-S-shape file for 300, in fp64, fp32, tf32,
# tf32x3 and bf16. About 450 s cold.
#   OUT=$OUT bash bench/results/h100_2026-12-06/call10.sh
set -u
T0=$SECONDS
R=/tmp/call10/r
rm -rf /tmp/call10; mkdir -p "$R"
pack() { tar -C /tmp/call10 -cJf "$OUT/results.tar.xz" r; }
nvidia-smi --query-gpu=name,memory.total --format=csv
site=/tmp/pysite; mkdir -p $site
python3 -m pip install -q --no-index --no-deps --target $site .device/py-wheels/*.whl > "$R/pip.log" 2>&1
export PYTHONPATH=$site
pyb=$(python3 -m pybind11 --cmakedir)
OUT=$R NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_python" \
  CMAKE_EXTRA="-DEDGEFRAME_BUILD_PYTHON=ON -Dpybind11_DIR=$pyb -DPython_EXECUTABLE=$(command -v python3)" \
  timeout 330 scripts/gpu_session.sh build > "$R/build.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build.log" | head -5
pack
export PYTHONPATH=$site:$PWD/build-gpu/python
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
python3 bench/v2_random_potential.py /tmp/umas.safetensors > "$R/potential.log" 2>&1
left=$((560 - (SECONDS - T0)))
timeout $((left * 45 / 100)) python3 bench/nve_precision.py --potential potentials/C-diamond-v2.safetensors \
  --out "$R/carbon" --steps 1000 > "$R/carbon.log" 2>&1
echo "carbon rc $? at $((SECONDS - T0)) s"; cat "$R/carbon.log"
pack
left=$((560 - (SECONDS - T0)))
timeout $left python3 bench/nve_precision.py --potential /tmp/umas.safetensors --out "$R/umas" --steps 300 \
  > "$R/umas.log" 2>&1
echo "umas rc $? at $((SECONDS - T0)) s"; cat "$R/umas.log"
pack
echo "total $((SECONDS - T0)) s"
