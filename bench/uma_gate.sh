#!/usr/bin/env bash
# The UMA gate (issue 26 item 1): one command, one GPU, one run. fairchem's own paths and
# edgeframe's two columns on the same random-weight UMA-S 1.2 (64 experts, built by fairchem
# from its released structure; edgeframe runs its conversion), on the same structures (diamond
# 512, bcc Cu 4394, diamond 4096, rattled 0.05 A), each column with its max |dF| against
# fairchem's fp64 forces of that structure, then one table:
#   fairchem   umas_fast_gpu + TF32 (the fastest path that runs here), the plain path (general +
#              TF32), UMA Nitro as it picks its kernels for this GPU (its sm90 CuTe path needs
#              nvidia-cutlass-dsl's cutlass.cute: carried apart, scripts/pack_cutlass_dsl.sh;
#              without it the record holds the import error) and Nitro's portable path
#              (Triton kernels, fp32 GEMMs);
#   edgeframe  the engine (bench case mode) and pair_style edgeframe/kk inside LAMMPS
#              (-k on g 1 -sf kk), tf32 and fp32.
#
#   bench/uma_gate.sh OUTDIR
#
# On the GPU machine: fairchem from the carried wheels on PYTHONPATH (bench/gpu-session.md,
# "fairchem on the device"), build-gpu/ with the bench and the plugin, lmp on PATH. Writes
# OUTDIR/fairchem.jsonl (bench/fairchem_gpu_speed.py), OUTDIR/edgeframe.log and its files
# (bench/v2_gpu_measure.sh), and OUTDIR/gate.md + gate.json (tools/uma_gate_table.py).
# UMA_GATE_SMOKE=1: the same chain on a CPU with a small model and 16-64-atom structures
# (fairchem's general path, the engine and edgeframe/kk on Kokkos threads, fp32 and fp64):
# it checks the plumbing, not speed. TIME_LEFT (seconds) bounds the edgeframe part. A shorter
# gate for a call with little device time: UMA_GATE_PATHS (fairchem's paths, comma-separated),
# UMA_GATE_PRECISIONS (edgeframe's, space-separated), UMA_GATE_LAMMPS_TAGS (empty: no LAMMPS).
set -u
out=${1:?usage: bench/uma_gate.sh OUTDIR}
mkdir -p "$out"
T0=$SECONDS
fc_py=${EDGEFRAME_FAIRCHEM_PYTHON:-python3}
if [[ -n ${UMA_GATE_SMOKE:-} ]]; then
  fc_args=(--device cpu --small --steps 2 --warmup 1 --paths general_fp32 --budget 600)
  tags="diamond_16 bcc_cu_16 diamond_64" lammps_tags="diamond_16 bcc_cu_16" precisions="fp32 fp64"
  export KOKKOS_ARGS=${KOKKOS_ARGS:--k on t 2 -sf kk} BUILD_DIR=${BUILD_DIR:-$PWD/build}
else
  fc_args=(--paths "${UMA_GATE_PATHS:-fast_gpu_tf32,general_tf32,nitro,nitro_portable}" --steps 10 --warmup 3
           --budget "${FAIRCHEM_BUDGET:-400}")
  tags="diamond_512 bcc_cu_4394 diamond_4096" lammps_tags=${UMA_GATE_LAMMPS_TAGS-"diamond_512 bcc_cu_4394"}
  precisions=${UMA_GATE_PRECISIONS:-"tf32 fp32"}
fi
echo "== fairchem: model, conversion, fp64 references of every structure, its paths"
PYTHONUNBUFFERED=1 "$fc_py" bench/fairchem_gpu_speed.py --workdir "$out/fairchem" --out "$out/fairchem.jsonl" \
  --fp64-all "${fc_args[@]}" > "$out/fairchem.log" 2>&1
echo "fairchem rc $? at $((SECONDS - T0)) s: $(grep -c '"record": "timing"' "$out/fairchem.jsonl" 2>/dev/null) timing records"
pot=$(ls "$out"/fairchem/uma-s-1p2-*.safetensors 2>/dev/null | head -1)
[[ -n $pot ]] || { echo "uma_gate: no converted model in $out/fairchem (see $out/fairchem.log)"; exit 1; }
echo "== edgeframe: engine and LAMMPS columns on fairchem's structures"
V2_FROM_REF=1 V2_TAGS=$tags V2_LAMMPS_TAGS=$lammps_tags V2_PRECISIONS=$precisions \
  bench/v2_gpu_measure.sh "$pot" "$out/edgeframe" "$out/fairchem/ref" > "$out/edgeframe.log" 2>&1
echo "edgeframe rc $? at $((SECONDS - T0)) s"
${EDGEFRAME_PYTHON:-python3} tools/uma_gate_table.py "$out" && cat "$out/gate.md"
