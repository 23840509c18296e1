#!/usr/bin/env bash
# H200 call 3 (after call 2 on the same machine): the plugin built, then model v2 (the random
# UMA-S-shape file of call 1) in LAMMPS with edgeframe/kk on the GPU: graph per_step against
# graph per_rebuild with cuda_graph yes (static positions: Loop time over 50 steps), tf32, diamond
# 512 and bcc 4394; then 200 NVE steps of diamond 512 with cuda_graph (replays across rebuilds).
set -u
T0=$SECONDS
left() { echo $(( 560 - (SECONDS - T0) )); }
NO_STATE=1 BUILD_TARGETS="edgeframeplugin" timeout 330 scripts/gpu_session.sh build
source "$(scripts/bootstrap.sh --gpu --print-env)"
export LD_LIBRARY_PATH="$LAMMPS_ROOT/lib:$Kokkos_ROOT/lib:${LD_LIBRARY_PATH:-}"
plugin=$PWD/build-gpu/src/lammps/edgeframeplugin.so pot=/tmp/umas.safetensors cases=/tmp/cases
[[ -f $pot ]] || { python3 bench/v2_random_potential.py $pot; python3 bench/v2_cases.py --potential $pot --out $cases --cases diamond512,bcc4394; }
lmp_in() {  # data elements style steps nve
  cat <<IN
units metal
atom_style atomic
atom_modify map array
boundary p p p
read_data $1
plugin load $plugin
pair_style edgeframe precision tf32 task omat $3
pair_coeff * * $pot $2
neighbor 0.5 bin
thermo_style custom step pe ke etotal
thermo_modify format float %.10g
IN
  if [[ $5 == nve ]]; then
    echo "velocity all create 300 1 mom yes rot yes"; echo "fix 1 all nve"; echo "timestep 0.0005"
    echo "thermo 20"; echo "run $4"
  else
    echo "thermo 50"; echo "run 5"; echo "run $4"
  fi
}
for tag in diamond512 bcc4394; do
  for variant in per_step graph; do
    [[ $(left) -lt 60 ]] && { echo "skipped $tag $variant: time"; continue; }
    style="graph per_step"; [[ $variant == graph ]] && style="graph per_rebuild cuda_graph yes"
    lmp_in $cases/$tag.data "$(cat $cases/$tag.elements)" "$style" 50 static > $OUT/in.$tag-$variant
    timeout 150 lmp -k on g 1 -sf kk -pk kokkos newton off neigh full -in $OUT/in.$tag-$variant -log $OUT/log.$tag-$variant > /dev/null 2>&1
    echo "$tag $variant rc $?: $(grep 'Loop time' $OUT/log.$tag-$variant | tail -1) | $(grep 'cuda_graph:' $OUT/log.$tag-$variant | tail -1)"
  done
done
if [[ $(left) -gt 90 ]]; then
  lmp_in $cases/diamond512.data C "graph per_rebuild cuda_graph yes" 200 nve > $OUT/in.nve-graph
  timeout 150 lmp -k on g 1 -sf kk -pk kokkos newton off neigh full -in $OUT/in.nve-graph -log $OUT/log.nve-graph > /dev/null 2>&1
  echo "nve graph rc $?: $(grep 'cuda_graph:' $OUT/log.nve-graph | tail -1)"; grep -A12 "^ *Step" $OUT/log.nve-graph | tail -12
fi
echo "== done at $((SECONDS - T0)) s"
