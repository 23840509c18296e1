"""edgeframe's engine from Python with ASE (doc/python.md): a rattled diamond cell relaxed with
FIRE, then NVE with velocity Verlet, energy conservation printed.
Run from the repository root after scripts/build.sh (or pip install .):
    source $(scripts/bootstrap.sh --print-env)
    PYTHONPATH=build/python $EDGEFRAME_PYTHON examples/python/relax_and_md.py"""
import numpy as np
from ase import units
from ase.build import bulk
from ase.md.verlet import VelocityVerlet
from ase.optimize import FIRE

import edgeframe

atoms = bulk("C", "diamond", a=3.567, cubic=True).repeat((2, 2, 2))
atoms.rattle(0.1, seed=1)
atoms.calc = edgeframe.Calculator("potentials/C-diamond-v2.safetensors", device="auto", precision="fp64")
print(f"engine on {edgeframe.execution_space()}; {len(atoms)} atoms")
print(f"start: E = {atoms.get_potential_energy():.6f} eV, max |F| = {np.abs(atoms.get_forces()).max():.4f} eV/A")
# Model v2 is smooth at the perfect lattice (doc/model.md "Known problems"), so FIRE takes the
# rattled cell back to the crystal and converges tightly (the v1 files stop short of it).
converged = FIRE(atoms, logfile=None).run(fmax=1e-3, steps=300)
print(f"FIRE, 300 steps at most, fmax 1e-3 eV/A: converged {converged}; E = {atoms.get_potential_energy():.6f} eV, max |F| = {np.abs(atoms.get_forces()).max():.2e} eV/A, "
      f"stress = {atoms.get_stress()[:3] / units.GPa} GPa (xx yy zz)")

# 300 K of Maxwell-Boltzmann velocities, momentum removed.
masses = atoms.get_masses()[:, None]
momenta = np.random.default_rng(2).normal(size=(len(atoms), 3)) * np.sqrt(masses * units.kB * 300)
atoms.set_momenta(momenta - momenta.mean(0))
dyn = VelocityVerlet(atoms, timestep=0.5 * units.fs)
totals = []
dyn.attach(lambda: totals.append(atoms.get_total_energy()), interval=10)
dyn.run(200)
print(f"NVE 200 steps of 0.5 fs: total energy drift {totals[-1] - totals[0]:+.2e} eV, "
      f"fluctuation {np.ptp(totals):.2e} eV")
