#!/bin/bash
# Right after call 2 on the warm machine, if device time is left: the 4608-atom gate at skin 0
# (call 2's step 6) when call 2 had no time for it, then the LAMMPS column at skin 0.5 A there.
set -u
T0=$SECONDS
R=$OUT/r
mkdir -p "$R"
gate() {  # name, budget, args
  OUT=$R GATE_OUT=$1 GATE_BUDGET=$2 GATE_ARGS="$3" timeout -s INT -k 10 $(($2 + 40)) scripts/gpu_session.sh gate > "$R/$1.out" 2>&1
  echo "gate $1 rc $? at $((SECONDS - T0)) s"; grep -E "^\|" "$R/$1/gate.md" 2>/dev/null || tail -20 "$R/$1.out"
}
gate gate-4608-skin0 200 "--bench-b-env EDGEFRAME_UNROTATE_PARTS=1 --case-timeout 150 --lmp-skin 0.0 --cases diamond:4400:L2 --columns engine-tf32-graph,engine-b-tf32-graph,lammps-tf32-graph --repeats 21 --warmup 3"
gate gate-4608-skin05 120 "--no-reference --case-timeout 120 --cases diamond:4400:L2 --lmp-skin 0.5 --columns lammps-tf32-graph --repeats 21 --warmup 3"
echo "total $((SECONDS - T0)) s"
