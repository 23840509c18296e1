"""The engine from Python (doc/python.md): edgeframe.Calculator on ASE atoms against pair_style
edgeframe in LAMMPS on the same structure (energy, forces, stress, per-atom energies to 1e-12 in
fp64), ASE's numerical stress, an ASE relaxation and NVE run, the bad-input errors, and
edgeframe.Model without ASE. Needs the module built (EDGEFRAME_BUILD_PYTHON; scripts/build.sh
turns it on): ctest passes its folder as --python-dir."""
import re
import sys

import numpy as np
import pytest

from reference_case import METAL_NKTV2P, structures
from test_vs_reference import VOIGT, make_small_model, run_case, structure

ase = pytest.importorskip("ase")
# Same engine, same graph, sums in other orders (ASE's pair order against LAMMPS'): fp64 rounding.
REL_TOL = 1e-12


@pytest.fixture(scope="module")
def edgeframe_module(request):
    folder = request.config.getoption("--python-dir")
    if not folder:
        pytest.skip("the Python module was not built (configure with -DEDGEFRAME_BUILD_PYTHON=ON)")
    sys.path.insert(0, folder)
    import edgeframe
    return edgeframe


@pytest.fixture(scope="module")
def small_model(tmp_path_factory):
    return make_small_model(tmp_path_factory)


def to_ase(atoms):
    return ase.Atoms(symbols=list(atoms.symbols), positions=atoms.positions, cell=atoms.cell, pbc=atoms.pbc)


def close(a, b, rel=REL_TOL):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.all(np.isfinite(a)) and np.abs(a - b).max() <= rel * max(np.abs(b).max(), 1.0)


@pytest.mark.parametrize("name", ["diamond64", "bcc_cu54", "triclinic_ccu16", "cluster"])
def test_calculator_equals_lammps(lammps, tmp_path, small_model, edgeframe_module, name):
    _, path = small_model
    atoms, boundary = structure(name)
    q, thermo, dump, _ = run_case(lammps, tmp_path, path, atoms, boundary)
    a = to_ase(atoms)
    a.calc = edgeframe_module.Calculator(path, device="auto", precision="fp64")
    energy = a.get_potential_energy()
    forces = a.get_forces() @ q.T                       # into LAMMPS' frame
    assert abs(energy - thermo[1]) <= REL_TOL * max(abs(thermo[1]), 1.0), (energy, thermo[1])
    assert close(forces, dump[:, 1:4])
    assert close(a.get_potential_energies(), dump[:, 4])
    if all(a.pbc):
        # ASE: stress = -W / V (Voigt xx yy zz yz xz xy); LAMMPS' thermo row holds W (eV).
        s = a.get_stress(voigt=False)
        w = q @ (-s * a.get_volume()) @ q.T
        assert close([w[i, j] for i, j in VOIGT], thermo[2:8])


def test_stress_equals_numerical_derivative(small_model, edgeframe_module):
    _, path = small_model
    atoms, _ = structure("triclinic_ccu16")
    a = to_ase(atoms)
    a.calc = edgeframe_module.Calculator(path)
    analytic = a.get_stress()
    from ase.calculators.fd import calculate_numerical_stress
    numerical = calculate_numerical_stress(a, eps=1e-5)
    # Central differences of step 1e-5 in the strain: error ~1e-10 of the stress scale.
    assert np.abs(analytic - numerical).max() <= 1e-7 * max(np.abs(analytic).max(), 1e-3), (analytic, numerical)
    assert np.abs(analytic).max() > 1e-4    # not a comparison of zeros


def test_relaxation_and_nve(small_model, edgeframe_module):
    from ase.md.verlet import VelocityVerlet
    from ase.optimize import FIRE
    from ase import units
    _, path = small_model
    a = to_ase(structures.rattle(structures.diamond((2, 2, 2)), 0.05, seed=11))
    a.calc = edgeframe_module.Calculator(path)
    e0, f0 = a.get_potential_energy(), np.abs(a.get_forces()).max()
    # A random model's surface is soft and flat near the lattice: FIRE lowers the energy and the
    # forces steadily without reaching a tight fmax in a test's time.
    FIRE(a, logfile=None).run(fmax=1e-4, steps=100)
    assert np.abs(a.get_forces()).max() < 0.5 * f0
    assert a.get_potential_energy() < e0 - 1e-3
    # NVE from the relaxed structure with 300 K of velocities: total energy conserved.
    rng = np.random.default_rng(3)
    a.set_velocities(rng.normal(scale=0.03, size=(len(a), 3)))
    dyn = VelocityVerlet(a, timestep=0.25 * units.fs, logfile=None)
    totals = []
    dyn.attach(lambda: totals.append(a.get_total_energy()), interval=5)
    dyn.run(100)
    assert np.ptp(totals) < 1e-4 * len(a), np.ptp(totals)


def test_unknown_element_is_a_value_error_listing_the_elements(small_model, edgeframe_module):
    _, path = small_model
    a = ase.Atoms("SiC", positions=[[0, 0, 0], [1.5, 0, 0]])
    a.calc = edgeframe_module.Calculator(path)
    with pytest.raises(ValueError, match=r"no element Si \(it has: C Cu\)"):
        a.get_potential_energy()


def test_bad_file_and_device_are_value_errors(tmp_path, small_model, edgeframe_module):
    _, path = small_model
    with pytest.raises(ValueError, match="not-there.safetensors"):
        edgeframe_module.Calculator(tmp_path / "not-there.safetensors")
    other = "cuda" if edgeframe_module.execution_space() != "Cuda" else "cpu"
    with pytest.raises(ValueError, match=f"device '{other}' is not this build's"):
        edgeframe_module.Calculator(path, device=other)


def test_model_compute_rejects_species_and_pair_indices_out_of_range(small_model, edgeframe_module):
    # Model.compute takes species and pair indices as arrays; one outside the potential's species
    # list or the structure's atoms would be read past a table by the kernels.
    _, path = small_model
    model = edgeframe_module.Model(str(path), "fp64")
    x = np.array([[0.0, 0.0, 0.0], [1.5, 0.0, 0.0]])
    pair_i, pair_j = np.array([0, 1], np.int32), np.array([1, 0], np.int32)
    shifts = np.zeros((2, 3))
    ok = model.compute(x, np.array([0, 1], np.int32), pair_i, pair_j, shifts, energies=True, virial=False)
    assert np.all(np.isfinite(ok["forces"]))
    n_species = len(model.elements)
    with pytest.raises(ValueError, match=rf"species: atom 1 has species index {n_species}, but potential .* "
                                         rf"has species 0..{n_species - 1}"):
        model.compute(x, np.array([0, n_species], np.int32), pair_i, pair_j, shifts, energies=True, virial=False)
    with pytest.raises(ValueError, match="species: atom 0 has species index -1"):
        model.compute(x, np.array([-1, 0], np.int32), pair_i, pair_j, shifts, energies=True, virial=False)
    with pytest.raises(ValueError, match=r"pair_j: pair 1 has atom index 2, outside 0..1"):
        model.compute(x, np.array([0, 1], np.int32), pair_i, np.array([1, 2], np.int32), shifts, energies=True,
                      virial=False)


def test_model_works_without_ase(request, small_model):
    # edgeframe.Model needs no ASE (the GPU machine has none); the calculator, which does, is
    # imported when first asked for and says so then.
    import subprocess
    _, path = small_model
    folder = request.config.getoption("--python-dir")
    if not folder:
        pytest.skip("the Python module was not built (configure with -DEDGEFRAME_BUILD_PYTHON=ON)")
    code = (f"import sys; sys.path.insert(0, {folder!r}); sys.modules['ase'] = None\n"
            "import edgeframe\n"
            "assert 'edgeframe.calculator' not in sys.modules\n"
            f"m = edgeframe.Model({str(path)!r}, 'fp64'); print('r_cut', m.r_cut)\n"
            "try:\n    edgeframe.Calculator\nexcept ImportError as e:\n    print('calculator:', e)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "r_cut 2.8" in run.stdout and re.search(r"calculator: .*\base\b", run.stdout), run.stdout
