#!/bin/bash
# H200 call 6: the UMA gate (issue 26 item 1) with UMA Nitro's sm90 path, shortened for the
# device time left: fairchem umas_fast_gpu + TF32 and both Nitro paths, edgeframe tf32 (engine on
# all three structures, LAMMPS on diamond 512). The machine is warm
# from call 1 (build-gpu/ and the dependency prefix are there); calls 2-5 copied
# nvidia-cutlass-dsl's parts aa..ad into /tmp/cutlass-parts. Carried: .device/fairchem-wheels,
# .device/cutlass-dsl/{part.ae,INSTALL.sh,parts.sha256}. Predictions: predictions.md.
#   OUT=$OUT bash bench/results/h200_2026-12-05/call6.sh
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
cp .device/cutlass-dsl/part.ae /tmp/cutlass-parts/
ls -la /tmp/cutlass-parts
bash .device/fairchem-wheels/INSTALL.sh /tmp/fcpkgs > "$R/install.log" 2>&1; echo "fairchem install rc $?"
bash .device/cutlass-dsl/INSTALL.sh /tmp/cutlass-parts /tmp/fcpkgs >> "$R/install.log" 2>&1; echo "cutlass install rc $?"
tail -2 "$R/install.log"
export PYTHONPATH=/tmp/fcpkgs:/tmp/fcpkgs/nvidia_cutlass_dsl/dsl_packages
python3 -c "import cutlass.cute, cutlass.pipeline, cutlass.utils.hopper_helpers; print('cutlass.cute', cutlass.__file__)" 2>&1 | tail -2
source "$(scripts/bootstrap.sh --gpu --print-env)"
export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}" PATH="$LAMMPS_ROOT/bin:$PATH"
left=$((565 - (SECONDS - T0)))
UMA_GATE_PATHS=fast_gpu_tf32,nitro,nitro_portable UMA_GATE_PRECISIONS=tf32 UMA_GATE_LAMMPS_TAGS=diamond_512 \
  TIME_LEFT=$((left * 45 / 100)) FAIRCHEM_BUDGET=$((left * 50 / 100)) timeout $((left - 5)) bash bench/uma_gate.sh /tmp/uma-gate \
  > "$R/uma-gate.out" 2>&1
echo "uma_gate rc $? at $((SECONDS - T0)) s"
cp /tmp/uma-gate/gate.md /tmp/uma-gate/gate.json /tmp/uma-gate/fairchem.jsonl "$R/" 2>/dev/null
tar -C /tmp/uma-gate --exclude='*.case' --exclude='*.data' --exclude='*.safetensors' --exclude='*.pt' \
  --exclude='*.dump' --exclude='*.f8' --exclude='*.npz' -cJf "$R/uma-gate-logs.tar.xz" fairchem.log edgeframe.log edgeframe 2>/dev/null
cat "$R/uma-gate.out"
tar -C "$OUT" -cJf "$OUT/results.tar.xz" r
echo "total $((SECONDS - T0)) s"
