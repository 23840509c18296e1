#!/usr/bin/env bash
# H200 call 1 (issue #26 item 3): the precision modes bf16 and tf32x3 beside fp64, fp32 and tf32,
# in the bench's case mode: the random UMA-S-shape v2 model (diamond 512, bcc 4394) and the
# shipped, trained C-diamond-v2 (diamond 512); max |dF| of every mode against fp64 at the end.
#   run from the repository root: OUT=... bash bench/results/h200_2026-12-03b/call1.sh
set -u
T0=$SECONDS
left() { echo $(( ${CALL_BUDGET:-570} - (SECONDS - T0) )); }
NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_bench" timeout 330 scripts/gpu_session.sh build
echo "== build done at $((SECONDS - T0)) s"
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
bench=$PWD/build-gpu/bench/edgeframe_bench
[[ -x $bench ]] || { echo "no bench binary"; exit 1; }
pot=/tmp/umas.safetensors cases=/tmp/cases ccases=/tmp/ccases cpot=potentials/C-diamond-v2.safetensors
python3 bench/v2_random_potential.py $pot > "$OUT/potential.log" 2>&1
python3 bench/v2_cases.py --potential $pot --out $cases --cases diamond512,bcc4394 > "$OUT/cases.log" 2>&1
python3 bench/v2_cases.py --potential $cpot --out $ccases --cases diamond512 >> "$OUT/cases.log" 2>&1
one() {  # label case-file potential precision reps
  local label=$1 case=$2 p=$3 prec=$4 reps=$5
  [[ $(left) -lt 25 ]] && { echo "skipped $label $prec: time"; return; }
  timeout 90 "$bench" --case "$case" --potential "$p" --precision "$prec" --reps "$reps" --warmup 2 \
    --forces-out "/tmp/f-$label-$prec" > "$OUT/bench-$label-$prec.log" 2>&1
  echo "$label $prec rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"n_edges": [0-9]*\|"peak_bytes": [0-9]*' "$OUT/bench-$label-$prec.log" | tr '\n' ' ')"
}
for prec in fp64 tf32 bf16 tf32x3 fp32; do one C-diamond512 $ccases/diamond512.case $cpot $prec 10; done
for prec in fp64 tf32 bf16 tf32x3 fp32; do one umas-diamond512 $cases/diamond512.case $pot $prec 20; done
for prec in tf32 bf16 tf32x3 fp32 fp64; do one umas-bcc4394 $cases/bcc4394.case $pot $prec $([[ $prec == fp64 ]] && echo 3 || echo 20); done
python3 - <<'PY' | tee "$OUT/forces-vs-fp64.txt"
import numpy as np
def load(p): return np.fromfile(p, dtype="<f8").reshape(-1, 3)
for label in ("C-diamond512", "umas-diamond512", "umas-bcc4394"):
    try:
        ref = load(f"/tmp/f-{label}-fp64")
    except Exception as e:
        print(label, "no fp64 forces", e); continue
    scale = np.abs(ref).max()
    for prec in ("fp32", "tf32", "bf16", "tf32x3"):
        try:
            f = load(f"/tmp/f-{label}-{prec}")
        except Exception as e:
            print(label, prec, "missing", e); continue
        d = np.abs(f - ref).max()
        print(f"{label} {prec}: max|dF| {d:.3e} eV/A = {d / scale:.3e} of max|F| {scale:.3e}")
PY
echo "== done at $((SECONDS - T0)) s"
