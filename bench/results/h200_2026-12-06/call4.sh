#!/bin/bash
# Issue 23's 9 ms on an H200 (calls 1-3 ran on an H100): a cold machine with the LAMMPS-CUDA
# prefix of call 1b (.device/deps-gpu.tar.xz); plugin and bench built, then call 2's 512-atom
# gate (engine replayed with and without the parted unrotate forward, edgeframe/kk with graph
# per_rebuild + cuda_graph yes at skin 0 and 0.5 A). Predictions: predictions.md.
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
OUT=/tmp NO_STATE=1 BUILD_TARGETS="edgeframeplugin edgeframe_bench" timeout 300 scripts/gpu_session.sh build > "$R/build-step.log" 2>&1
echo "build rc $? at $((SECONDS - T0)) s"; grep -E "built in|rror" "$R/build-step.log" | head -5
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
gate() {  # name, budget, args
  OUT=$R GATE_OUT=$1 GATE_BUDGET=$2 GATE_ARGS="$3" timeout -s INT -k 10 $(($2 + 40)) scripts/gpu_session.sh gate > "$R/$1.out" 2>&1
  echo "gate $1 rc $? at $((SECONDS - T0)) s"; grep -E "^\|" "$R/$1/gate.md" 2>/dev/null || tail -20 "$R/$1.out"
}
gate gate-512-skin0 100 "--bench-b-env EDGEFRAME_UNROTATE_PARTS=1 --case-timeout 90 --lmp-skin 0.0 --columns engine-tf32-graph,engine-b-tf32-graph,lammps-tf32-graph --repeats 21 --warmup 3 --cases diamond:512:L2"
gate gate-512-skin05 60 "--no-reference --case-timeout 60 --cases diamond:512:L2 --lmp-skin 0.5 --columns lammps-tf32-graph --repeats 21 --warmup 3"
echo "total $((SECONDS - T0)) s"
