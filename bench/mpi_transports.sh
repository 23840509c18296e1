#!/usr/bin/env bash
# Which OpenMPI transport setting moves LAMMPS' exchange messages fastest on this machine
# (issue #8): bench/mpi_swap_bandwidth.c (two ranks swapping one message each way, as one swap
# of LAMMPS' forward / reverse communication) under each setting below, as a table.
#   bench/mpi_transports.sh OUTDIR [max_MB]
# Writes OUTDIR/mpi-best.env: `export ...` of the setting with the highest bandwidth at the
# largest size (empty for the default), which scripts/gpu_session.sh's scaling step can source.
set -uo pipefail
out=${1:?usage: bench/mpi_transports.sh OUTDIR [max_MB]}; max_mb=${2:-64}
mkdir -p "$out"
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exe=$(mktemp -d)/mpi_swap_bandwidth
mpicc -O2 "$repo/bench/mpi_swap_bandwidth.c" -o "$exe" || exit 1
echo "OpenMPI: $(ompi_info --parsable 2>/dev/null | grep -m1 'ompi:version:full' | cut -d: -f4)," \
     "vader single-copy: $(ompi_info --parsable --all 2>/dev/null | grep -m1 'btl_vader_single_copy_mechanism:value' | cut -d: -f4)," \
     "/dev/shm $(df -h /dev/shm 2>/dev/null | awk 'NR==2{print $2}')," \
     "ptrace_scope $(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo n/a)"
declare -a names=(default single-copy-none single-copy-cma tcp no-binding)
declare -A envs=(
  [default]=""
  [single-copy-none]="OMPI_MCA_btl_vader_single_copy_mechanism=none"
  [single-copy-cma]="OMPI_MCA_btl_vader_single_copy_mechanism=cma"
  [tcp]="OMPI_MCA_btl=self,tcp"
  [no-binding]="OMPI_MCA_hwloc_base_binding_policy=none"
)
best="" best_bw=0
for n in "${names[@]}"; do
  echo "-- $n ${envs[$n]}"
  # shellcheck disable=SC2086
  env ${envs[$n]} timeout 60 mpirun --allow-run-as-root --oversubscribe -np 2 "$exe" "$max_mb" > "$out/mpi-$n.txt" 2>&1
  rc=$?
  cat "$out/mpi-$n.txt"
  bw=$(awk 'NF==3 && $1 ~ /^[0-9]+$/ {b=$3} END {print b+0}' "$out/mpi-$n.txt")
  [[ $rc -eq 0 ]] && awk -v a="$bw" -v b="$best_bw" 'BEGIN{exit !(a > b)}' && { best=$n; best_bw=$bw; }
done
echo "fastest at ${max_mb} MB: ${best:-none} (${best_bw} GB/s)"
: > "$out/mpi-best.env"
[[ -n $best && -n ${envs[$best]} ]] && echo "export ${envs[$best]}" > "$out/mpi-best.env"
cat "$out/mpi-best.env"
