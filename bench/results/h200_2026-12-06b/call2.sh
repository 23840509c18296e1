#!/bin/bash
# Issue 23 item 5 on an H200: edgeframe (plugin, bench, units) built against the LAMMPS of call 1;
# the gate at 512 atoms (engine replayed, edgeframe/kk with graph per_rebuild + cuda_graph yes at
# skin 0 and 0.5 A), and at 4608 atoms (skin 0), each against the build of commit 529a32f (the
# tree before issue 23's work: engine-b, its bench built on the CPU machine with nvcc,
# .device/old529/), all in one run. Predictions: predictions.md.
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
left() { echo $((585 - (SECONDS - T0))); }
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
OUT=/tmp NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench edgeframe_unit_tests" timeout 330 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-step.log" | head -5
OLD=""
if [[ -x .device/old529/edgeframe_bench ]]; then
  # Built on the CPU machine: its rpath names that machine's torch; here the device's is used.
  export LD_LIBRARY_PATH=$(python3 -c "import os, torch; print(os.path.dirname(torch.__file__))")/lib:${LD_LIBRARY_PATH:-}
  .device/old529/edgeframe_bench --help 2>&1 | head -2
  OLD="--bench-b $PWD/.device/old529/edgeframe_bench"
fi
COLS=engine-tf32-graph,lammps-tf32-graph
[[ -n $OLD ]] && COLS=engine-tf32-graph,engine-b-tf32-graph,lammps-tf32-graph
gate() {  # name, budget, args
  OUT=$R GATE_OUT=$1 GATE_BUDGET=$2 GATE_ARGS="$3" timeout -s INT -k 10 $(($2 + 40)) scripts/gpu_session.sh gate > "$R/$1.out" 2>&1
  echo "gate $1 rc $? at $((SECONDS - T0)) s"; grep -E "^\|" "$R/$1/gate.md" 2>/dev/null || tail -20 "$R/$1.out"
}
gate gate-512-skin0 110 "$OLD --case-timeout 90 --lmp-skin 0.0 --columns $COLS --repeats 21 --warmup 3 --cases diamond:512:L2"
gate gate-512-skin05 60 "--no-reference --case-timeout 60 --cases diamond:512:L2 --lmp-skin 0.5 --columns lammps-tf32-graph --repeats 21 --warmup 3"
[[ $(left) -gt 150 ]] && gate gate-4608-skin0 $(($(left) - 50)) "$OLD --case-timeout 150 --lmp-skin 0.0 --columns $COLS --repeats 21 --warmup 3 --cases diamond:4400:L2"
# One file for the gate folders (the device tool brings back at most 8 files).
tar -C "$R" -cJf "$OUT/gates.tar.xz" . && rm -rf "$R"
echo "total $((SECONDS - T0)) s"
