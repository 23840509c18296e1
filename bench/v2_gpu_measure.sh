#!/usr/bin/env bash
# Model v2 on the GPU (issue 24 items 3 and 5): the engine column (bench case mode) and the
# LAMMPS column (edgeframe/kk, -k on g 1 -sf kk) of a converted fairchem model on the speed
# table's structures, and LAMMPS' energy and forces against fairchem's own prediction of the same
# structure on the same GPU.
#
#   bench/v2_gpu_measure.sh POTENTIAL OUTDIR [FAIRCHEM_DIR]
#
# POTENTIAL: a v2 file (tools/convert_fairchem.py). FAIRCHEM_DIR: the --ref-dir of bench/fairchem_gpu_speed.py
# (diamond_512.data, diamond_512.npz with fairchem fp64 / fp32 predictions); without it only
# the timings run. With V2_FROM_REF=1 the cases are fairchem's structures themselves (tags: its
# names, which V2_TAGS and V2_LAMMPS_TAGS must then use) and every engine and LAMMPS column gets
# its max |dF| against fairchem's fp64 forces where FAIRCHEM_DIR has them (--fp64-all). Needs build-gpu/ (bench + plugin) and lmp on PATH (scripts/gpu_session.sh's
# environment). Every step has a timeout; TIME_LEFT (seconds, default 500) bounds the whole.
set -u
pot=$1 out=$2 fc=${3:-}
mkdir -p "$out"
T0=$SECONDS
left() { echo $(( ${TIME_LEFT:-500} - (SECONDS - T0) )); }
bench=${BUILD_DIR:-$PWD/build-gpu}/bench/edgeframe_bench
plugin=${BUILD_DIR:-$PWD/build-gpu}/src/lammps/edgeframeplugin.so
cases=$out/cases
if [[ -n ${V2_FROM_REF:-} && -n $fc ]]; then
  # fairchem's own structures (FAIRCHEM_DIR/NAME.npz), tagged NAME, with their fp64 references:
  # every engine and LAMMPS column below gets its max |dF| against fairchem fp64 (bench/uma_gate.sh).
  ${EDGEFRAME_PYTHON:-python3} bench/v2_cases.py --potential "$pot" --out "$cases" --from-ref "$fc" ${V2_CASES:+--cases $V2_CASES} \
    | tee "$out/cases.log"
else
  ${EDGEFRAME_PYTHON:-python3} bench/v2_cases.py --potential "$pot" --out "$cases" --cases "${V2_CASES:-diamond512,bcc4394,diamond4096}" \
    | tee "$out/cases.log"
fi
# max |dF| of a forces file (raw <f8 [N, 3], or a LAMMPS dump sorted by id) against NAME.ref.npz
dforces() {  # forces_file ref_npz label
  [[ -f $2 && -f $1 ]] || return 0
  ${EDGEFRAME_PYTHON:-python3} - "$@" <<'PY'
import sys, numpy as np
path, ref, label = sys.argv[1:4]
r = np.load(ref)["forces"]
if path.endswith(".dump"):
    f = np.loadtxt(path, skiprows=9)
    f = f[np.argsort(f[:, 0]), 1:4]
else:
    f = np.fromfile(path, dtype="<f8").reshape(-1, 3)
d = np.abs(f - r).max()
print(f"{label}: max |dF| against fairchem fp64 {d:.3e} eV/A of max |F| {np.abs(r).max():.3e} (rel {d / np.abs(r).max():.2e})")
PY
}

echo "== engine column (bench case mode): median of 10 steps after 3 warm-up steps"
for tag in ${V2_TAGS:-diamond512 bcc4394 diamond4096}; do
  for prec in ${V2_PRECISIONS:-tf32 fp32}; do
    [[ $(left) -lt 60 ]] && { echo "skipped $tag $prec: time"; continue; }
    timeout 150 "$bench" --case "$cases/$tag.case" --potential "$pot" --precision "$prec" --reps 10 --warmup 3 \
      --forces-out "$out/forces-engine-$tag-$prec.f8" > "$out/bench-$tag-$prec.log" 2>&1
    echo "$tag $prec rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"n_edges": [0-9]*\|"peak_bytes": [0-9]*' "$out/bench-$tag-$prec.log" | tr '\n' ' ')"
    dforces "$out/forces-engine-$tag-$prec.f8" "$cases/$tag.ref.npz" "engine $tag $prec"
  done
done

lammps_in() {  # data elements precision steps dump
  cat <<EOF
units metal
atom_style atomic
atom_modify map array
boundary p p p
read_data $1
plugin load $plugin
pair_style edgeframe precision $3 task ${V2_TASK:-omat}
pair_coeff * * $pot $2
thermo_style custom step pe
thermo_modify format float %.15g
EOF
  if [[ $4 == 0 ]]; then
    echo "dump d all custom 1 $5 id fx fy fz"
    echo "dump_modify d sort id format float %.17g"
    echo "run 0"
  else
    echo "thermo 50"
    echo "run 10"
    echo "run $4"
    [[ -n ${5:-} ]] && echo "write_dump all custom $5 id fx fy fz modify sort id format float %.17g"
  fi
}

echo "== LAMMPS column (edgeframe/kk on the GPU, static positions: Loop time / steps)"
for tag in ${V2_LAMMPS_TAGS:-diamond512 bcc4394}; do
  for prec in ${V2_PRECISIONS:-tf32 fp32}; do
    [[ $(left) -lt 60 ]] && { echo "skipped LAMMPS $tag $prec: time"; continue; }
    lammps_in "$cases/$tag.data" "$(cat "$cases/$tag.elements")" "$prec" 50 "$out/forces-lammps-$tag-$prec.dump" \
      > "$out/in.$tag-$prec"
    timeout 150 ${LMP:-lmp} ${KOKKOS_ARGS:--k on g 1 -sf kk} -pk kokkos newton off neigh full -in "$out/in.$tag-$prec" \
      -log "$out/log.$tag-$prec" > /dev/null 2>&1
    echo "$tag $prec rc $?: $(grep 'Loop time' "$out/log.$tag-$prec" | tail -1)"
    dforces "$out/forces-lammps-$tag-$prec.dump" "$cases/$tag.ref.npz" "LAMMPS $tag $prec"
  done
done

if [[ -n $fc && -f $fc/diamond_512.data ]]; then
  echo "== LAMMPS (edgeframe/kk, GPU) against fairchem (same GPU) on $fc/diamond_512.data"
  for prec in fp64 fp32; do
    [[ $(left) -lt 40 ]] && { echo "skipped comparison $prec: time"; continue; }
    lammps_in "$fc/diamond_512.data" C "$prec" 0 "$out/forces-$prec.dump" > "$out/in.compare-$prec"
    timeout 120 ${LMP:-lmp} ${KOKKOS_ARGS:--k on g 1 -sf kk} -pk kokkos newton off neigh full -in "$out/in.compare-$prec" \
      -log "$out/log.compare-$prec" > /dev/null 2>&1
    echo "compare $prec rc $?"
    ${EDGEFRAME_PYTHON:-python3} - "$out/log.compare-$prec" "$out/forces-$prec.dump" "$fc/diamond_512.npz" "$prec" <<'PY'
import sys, numpy as np
log, dump, ref, prec = sys.argv[1:5]
lines = open(log).read().splitlines()
k = next(k for k, l in enumerate(lines) if l.split()[:2] == ["Step", "PotEng"])
e = float(lines[k + 1].split()[1])
rows = np.loadtxt(dump, skiprows=9)
f = rows[np.argsort(rows[:, 0]), 1:4]
r = np.load(ref)
key = "fp64" if prec == "fp64" else "fp32"
fe, ff = float(r[f"{key}_energy"]), r[f"{key}_forces"]
q = r["Q"] if "Q" in r else np.eye(3)
ff = ff @ q.T
print(f"{prec}: energy LAMMPS {e:.12f} fairchem {fe:.12f} rel {abs(e - fe) / abs(fe):.2e}; "
      f"forces max |diff| {np.abs(f - ff).max():.2e} eV/A of max |F| {np.abs(ff).max():.3e} "
      f"(rel {np.abs(f - ff).max() / np.abs(ff).max():.2e})")
PY
  done
fi
echo "v2_gpu_measure: $((SECONDS - T0)) s"
