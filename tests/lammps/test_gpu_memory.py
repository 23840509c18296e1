"""A GPU allocation failure on edgeframe/kk stops LAMMPS with an error that says what ran out and
what to change; no crash, no step integrated with missing forces (issue #5).

Nothing is told to fail: a bcc Cu box of 31 250 atoms (2.0 million edges) with a random
full-size L3 model in fp64 asks for several times the memory of any single GPU (the engine keeps
about 0.2 MB of autograd activations per edge in fp64: bench/results/gpu-notes-log.md), so the device's own
allocator refuses. `activations keep` is named: the default (auto) would plan around the
shortage by recomputing layers, and this test is about the error path. Runs only where EDGEFRAME_KOKKOS_ARGS puts Kokkos on a GPU (`-k on g 1 ...`,
scripts/gpu_session.sh); on a CPU the same box would just take the host's memory and time.
"""
import re

import pytest
import torch

from reference_case import KOKKOS_ARGS, ON_GPU, potential_io, random_init


REPS = 25    # bcc cells per side: 2 * 25^3 = 31 250 atoms


@pytest.mark.skipif(not ON_GPU, reason="needs Kokkos on a GPU (EDGEFRAME_KOKKOS_ARGS='-k on g 1 -sf kk')")
def test_gpu_out_of_memory_stops_with_a_clear_error(lammps, tmp_path):
    model = random_init.random_model(random_init.make_config("L3", species=("Cu",)), seed=0,
                                     dtype=torch.float64, device="cpu")
    pot = tmp_path / "L3-Cu.safetensors"
    potential_io.write_potential(pot, model, dtype="float64", trained_precision="float64",
                                 provenance={"data": "random weights (test_gpu_memory.py)"})
    proc = lammps(f"""
units metal
atom_style atomic
atom_modify map array
boundary p p p
lattice bcc 2.87
region box block 0 {REPS} 0 {REPS} 0 {REPS}
create_box 1 box
create_atoms 1 box
mass 1 63.546
displace_atoms all random 0.02 0.02 0.02 4321 units box
pair_style edgeframe precision fp64 activations keep
pair_coeff * * {pot} Cu
velocity all create 300 11
fix 1 all nve
thermo 1
run 2
""", args=KOKKOS_ARGS, timeout=600)
    out = proc.output
    assert proc.returncode != 0, out[-3000:]
    error = next((ln for ln in out.splitlines() if "ERROR" in ln), "")
    # The message names the style, the size this rank asked for and what ran out.
    assert "pair_style edgeframe" in error and "edges on rank 0" in error, out[-3000:]
    assert "out of memory" in error, out[-3000:]
    assert "fewer atoms" in error, error
    # Stopped in the setup force computation, before the thermo header: no step was integrated.
    assert not re.search(r"^\s*Step\s", out, re.M), out[-3000:]
    assert "Segmentation fault" not in out and "core dumped" not in out, out[-3000:]
