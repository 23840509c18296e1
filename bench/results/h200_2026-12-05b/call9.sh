#!/bin/bash
# Device call 9 (warm from calls 3-8: build-gpu/ with the bench, the parts in /tmp/cutlass-parts):
# the UMA gate with fairchem's umas_fast_gpu + TF32 and UMA Nitro's sm90 path (CuTe kernels from
# nvidia-cutlass-dsl), edgeframe's engine tf32 on the three structures, one H200, one run; no
# LAMMPS column (no lmp on this machine). Carried: .device/fairchem-wheels,
# .device/cutlass-dsl/{INSTALL.sh,parts.sha256}.
#   OUT=$OUT bash bench/results/h200_2026-12-05b/call9.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
ls -la /tmp/cutlass-parts
bash .device/fairchem-wheels/INSTALL.sh /tmp/fcpkgs > "$R/install.log" 2>&1; echo "fairchem install rc $?"
bash .device/cutlass-dsl/INSTALL.sh /tmp/cutlass-parts /tmp/fcpkgs >> "$R/install.log" 2>&1; echo "cutlass install rc $?"
tail -2 "$R/install.log"
export PYTHONPATH=/tmp/fcpkgs:/tmp/fcpkgs/nvidia_cutlass_dsl/dsl_packages
python3 -c "import cutlass.cute; print('cutlass.cute', cutlass.__file__)" 2>&1 | tail -1
source "$(scripts/bootstrap.sh --gpu --no-lammps --print-env)"
left=$((${CALL_LIMIT:-565} - (SECONDS - T0)))
UMA_GATE_PATHS=fast_gpu_tf32,nitro UMA_GATE_PRECISIONS=tf32 UMA_GATE_LAMMPS_TAGS= \
  TIME_LEFT=$((left * 35 / 100)) FAIRCHEM_BUDGET=$((left * 55 / 100)) timeout $((left - 5)) bash bench/uma_gate.sh /tmp/uma-gate \
  > "$R/uma-gate.out" 2>&1
echo "uma_gate rc $? at $((SECONDS - T0)) s"
cp /tmp/uma-gate/gate.md /tmp/uma-gate/gate.json /tmp/uma-gate/fairchem.jsonl "$R/" 2>/dev/null
tar -C /tmp/uma-gate --exclude='*.case' --exclude='*.data' --exclude='*.safetensors' --exclude='*.pt' \
  --exclude='*.dump' --exclude='*.f8' --exclude='*.npz' -cJf "$R/uma-gate-logs.tar.xz" fairchem.log edgeframe.log edgeframe 2>/dev/null
cat "$R/uma-gate.out"
echo "total $((SECONDS - T0)) s"
