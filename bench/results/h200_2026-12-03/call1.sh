#!/usr/bin/env bash
# H200 call 1 (issues 26 item 4 and 25 item 4): model v2 steps captured as CUDA graphs, and
# model v2's activations recompute in edge chunks. Builds engine, units and bench (no LAMMPS:
# .device/deps-gpu.tar.xz holds Kokkos CUDA only), runs the GoogleTest units on the GPU, then the
# bench's case mode on a random UMA-S-shape v2 model: eager against --cuda-graph (same binary,
# same run), and keep / recompute / recompute in edge chunks (peak memory and time).
#   run from the repository root: OUT=... bash bench/results/h200_2026-12-03/call1.sh
set -u
T0=$SECONDS
left() { echo $(( ${CALL_BUDGET:-560} - (SECONDS - T0) )); }
NO_LAMMPS=1 NO_STATE=1 BUILD_TARGETS="edgeframe_unit_tests edgeframe_bench" timeout 380 scripts/gpu_session.sh build test
echo "== build + test done at $((SECONDS - T0)) s"
export LD_LIBRARY_PATH="/opt/edgeframe-deps/kokkos-5.0.2-cuda-hopper90/lib:${LD_LIBRARY_PATH:-}"
bench=$PWD/build-gpu/bench/edgeframe_bench
[[ -x $bench ]] || { echo "no bench binary"; exit 1; }
pot=/tmp/umas.safetensors cases=/tmp/cases
python3 bench/v2_random_potential.py $pot > "$OUT/potential.log" 2>&1
python3 bench/v2_cases.py --potential $pot --out $cases --cases diamond512,bcc4394,diamond4096 > "$OUT/cases.log" 2>&1
one() {  # tag precision label extra-args...
  local tag=$1 prec=$2 label=$3; shift 3
  [[ $(left) -lt 40 ]] && { echo "skipped $tag $prec $label: time"; return; }
  timeout 120 "$bench" --case "$cases/$tag.case" --potential $pot --precision "$prec" --reps 20 --warmup 3 \
    --forces-out "/tmp/f-$tag-$prec-$label" "$@" > "$OUT/bench-$tag-$prec-$label.log" 2>&1
  echo "$tag $prec $label rc $?: $(grep -o '"median_s": [0-9.e+-]*\|"n_edges": [0-9]*\|"peak_bytes": [0-9]*\|"predicted_peak_bytes": [0-9]*\|"cuda_graph_replays": [0-9]*' "$OUT/bench-$tag-$prec-$label.log" | tr '\n' ' ')"
}
echo "== eager against --cuda-graph"
for tag in diamond512 bcc4394; do
  for prec in tf32 fp32; do
    one $tag $prec eager
    one $tag $prec graph --cuda-graph
  done
done
echo "== activations: keep, recompute, recompute in edge chunks"
for tag in bcc4394 diamond4096; do
  one $tag tf32 keep --activations keep
  one $tag tf32 recompute --activations recompute
  one $tag tf32 chunk65536 --activations recompute --edge-chunk 65536
done
python3 - <<'PY' | tee "$OUT/forces-compare.txt"
import glob, numpy as np
def load(p): return np.fromfile(p, dtype="<f8").reshape(-1, 3)
pairs = [("diamond512", "tf32", "eager", "graph"), ("diamond512", "fp32", "eager", "graph"),
         ("bcc4394", "tf32", "eager", "graph"), ("bcc4394", "fp32", "eager", "graph"),
         ("bcc4394", "tf32", "keep", "recompute"), ("bcc4394", "tf32", "keep", "chunk65536"),
         ("diamond4096", "tf32", "keep", "chunk65536")]
for tag, prec, a, b in pairs:
    try:
        fa, fb = load(f"/tmp/f-{tag}-{prec}-{a}"), load(f"/tmp/f-{tag}-{prec}-{b}")
    except Exception as e:
        print(tag, prec, a, b, "missing", e); continue
    print(f"{tag} {prec} {a} vs {b}: max|dF| {np.abs(fa - fb).max():.3e} eV/A, max|F| {np.abs(fb).max():.3e}")
PY
echo "== done at $((SECONDS - T0)) s"
