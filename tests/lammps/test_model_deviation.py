"""Model deviation (pair_coeff with several potential files; doc/pair_edgeframe.md "Model
deviation"): the deviation file against the PyTorch reference evaluated on each model, on 1 and 2
MPI ranks in every ghost mode and through edgeframe/kk; zero for identical files; compute pair and
fix halt; the bad-input errors."""

import numpy as np
import pytest

from reference_case import KOKKOS_ARGS, ON_GPU, calc, potential_io, random_init, structures, write_data

# fp64 engine vs fp64 reference (test_vs_reference.py): ~1e-13 relative measured on the forces;
# the deviations are differences of such numbers, written with 13 significant digits.
REL_TOL = 1e-9
ABS_FLOOR = 1e-11    # eV/A or eV per atom: deviations of components that are ~0

COLUMNS = ["max_devi_v", "min_devi_v", "avg_devi_v", "max_devi_f", "min_devi_f", "avg_devi_f", "devi_e"]


def small_config(**overrides):
    kw = dict(lmax=2, mmax=2, r_cut=2.8, layers=3, channels=8, hidden_channels=8, ffn_channels=8, radial_hidden=16,
              readout_hidden=8, edge_emb=4, avg_neighbors=20.0)
    kw.update(overrides)
    species = kw.pop("species", ("C", "Cu"))
    return random_init.make_config("L2", species=species, **kw)


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory):
    """Two models of one architecture with different random weights (an ensemble's members)."""
    folder = tmp_path_factory.mktemp("ensemble")
    models, paths = [], []
    for seed in (7, 8):
        model = random_init.random_model(small_config(), seed=seed)
        path = folder / f"member{seed}.safetensors"
        potential_io.write_potential(path, model)
        models.append(model)
        paths.append(path)
    return models, paths


def write_model(folder, name, seed=9, **overrides):
    path = folder / name
    potential_io.write_potential(path, random_init.random_model(small_config(**overrides), seed=seed))
    return path


def atoms_case():
    return structures.rattle(structures.diamond((2, 2, 2)), 0.05, seed=1)


SCRIPT = """
units metal
atom_style atomic
boundary p p p
atom_modify map array
{pre}
read_data data.lmp
pair_style edgeframe precision fp64 out_freq {freq} out_file devi.out {keywords}
pair_coeff * * {models} C Cu
thermo_style custom step pe
thermo_modify format float %.17g
{extra}
"""


def run_ensemble(lammps, tmp_path, paths, nprocs=1, pre="", keywords="atomic", freq=1, extra="run 0 post no",
                 args=()):
    atoms = atoms_case()
    q = write_data(tmp_path / "data.lmp", atoms, ["C", "Cu"])
    script = SCRIPT.format(pre=pre, freq=freq, keywords=keywords, models=" ".join(str(p) for p in paths),
                           extra=extra)
    run = lammps(script, nprocs=nprocs, args=args)
    return atoms, q, run


def read_deviation(path):
    rows = [line.split() for line in path.read_text().splitlines() if not line.startswith("#")]
    return np.array([[float(v) for v in row] for row in rows])


def expected_deviation(models, atoms, q, relative=None, relative_v=None):
    """deepmd-kit's definitions (doc/pair_edgeframe.md), from the reference on each model."""
    refs = [calc.evaluate(m, atoms) for m in models]
    n = len(atoms)
    forces = np.stack([r["forces"] @ q.T for r in refs])                      # [K, N, 3] LAMMPS frame
    virials = np.stack([(q @ r["virial"] @ q.T).reshape(9) for r in refs])   # [K, 9]
    energies = np.array([r["energy"] for r in refs])
    devi_f = np.sqrt(np.mean(np.sum((forces - forces.mean(0)) ** 2, axis=-1), axis=0))
    if relative is not None:
        devi_f = devi_f / (np.linalg.norm(forces.mean(0), axis=-1) + relative)
    devi_v = np.std(virials / n, axis=0)
    if relative_v is not None:
        devi_v = devi_v / (np.abs(np.mean(virials / n, axis=0)) + relative_v)
    row = [devi_v.max(), devi_v.min(), np.sqrt(np.mean(devi_v ** 2)), devi_f.max(), devi_f.min(), devi_f.mean(),
           np.std(energies / n)]
    return np.array(row), devi_f, refs[0]["energy"]


def assert_close(got, want, what):
    got, want = np.asarray(got, float), np.asarray(want, float)
    bound = REL_TOL * np.maximum(np.abs(want), 1.0) + ABS_FLOOR
    bad = np.abs(got - want) > bound
    assert np.all(np.isfinite(got)) and not bad.any(), (what, got[bad], want[bad])


def pe_of_run(output):
    lines = output.splitlines()
    k = next(i for i, line in enumerate(lines) if line.split()[:2] == ["Step", "PotEng"])
    return float(lines[k + 1].split()[1])


@pytest.mark.parametrize("nprocs,keywords,args", [
    (1, "", ()),                                   # one rank: images folded onto owners
    (1, "fold_images no", ()),                     # per-layer exchange, forces on ghosts
    (2, "", ()),                                   # two ranks, per-layer exchange
    (2, "ghost_mode shell", ()),                   # two ranks, ghost shell
    (1, "", KOKKOS_ARGS),                          # edgeframe/kk, device-resident path
    # edgeframe/kk with a deviation and the exchange: the host-staged path, its exchange through
    # LAMMPS-KOKKOS' device communication (CPU builds; GPU builds with GPU-aware MPI)
    (2, "", KOKKOS_ARGS + ("-pk", "kokkos", "newton", "on", "neigh", "half")),
], ids=["1rank", "1rank-unfolded", "2ranks-exchange", "2ranks-shell", "kk-1rank", "kk-2ranks"])
def test_deviation_equals_reference(lammps, tmp_path, ensemble, nprocs, keywords, args):
    models, paths = ensemble
    atoms, q, run = run_ensemble(lammps, tmp_path, paths, nprocs=nprocs, keywords="atomic " + keywords, args=args)
    assert run.returncode == 0, run.output[-3000:]
    assert "model deviation of 2 potentials" in run.output
    if args and nprocs > 1:
        assert "a model deviation with the per-layer exchange; atom data is staged through the host" in run.output
        assert ON_GPU or "LAMMPS-KOKKOS device communication" in run.output, run.output[-3000:]
    rows = read_deviation(tmp_path / "devi.out")
    assert rows.shape == (1, 1 + len(COLUMNS) + len(atoms)), rows.shape
    want, want_atoms, energy = expected_deviation(models, atoms, q)
    assert rows[0, 0] == 0
    assert_close(rows[0, 1:8], want, COLUMNS)
    assert_close(rows[0, 8:], want_atoms, "per-atom force deviation in atom ID order")
    assert want[3] > 1e-3    # the two members really differ: the comparison is not of zeros
    # The first file alone drives the dynamics.
    assert abs(pe_of_run(run.output) - energy) <= 1e-10 * max(abs(energy), 1.0)


def test_relative_deviation_equals_reference(lammps, tmp_path, ensemble):
    models, paths = ensemble
    atoms, q, run = run_ensemble(lammps, tmp_path, paths, keywords="relative 1.5 relative_v 0.25")
    assert run.returncode == 0, run.output[-3000:]
    rows = read_deviation(tmp_path / "devi.out")
    assert rows.shape == (1, 1 + len(COLUMNS))
    want, _, _ = expected_deviation(models, atoms, q, relative=1.5, relative_v=0.25)
    assert_close(rows[0, 1:8], want, COLUMNS)


def test_identical_files_deviate_by_zero_during_md(lammps, tmp_path, ensemble):
    _, paths = ensemble
    md = "velocity all create 600 4 loop geom\nfix nve all nve\ntimestep 0.0005\nrun 10"
    atoms, _, run = run_ensemble(lammps, tmp_path, [paths[0], paths[0], paths[0]], freq=5, extra=md)
    assert run.returncode == 0, run.output[-3000:]
    rows = read_deviation(tmp_path / "devi.out")
    assert rows[:, 0].tolist() == [0, 5, 10]
    assert rows.shape[1] == 1 + len(COLUMNS) + len(atoms)
    assert np.all(rows[:, 1:] == 0.0), rows[:, 1:].max()


def test_compute_pair_and_fix_halt(lammps, tmp_path, ensemble):
    # compute pair gives the file's columns; fix halt stops the run once max_devi_f passes a bound.
    models, paths = ensemble
    atoms, q, _ = run_ensemble(lammps, tmp_path, paths, keywords="")
    first = read_deviation(tmp_path / "devi.out")[0]
    bound = float(0.5 * first[4])    # passed already at the first deviation step after step 0
    md = f"""compute dev all pair edgeframe
variable maxdev equal c_dev[4]
thermo_style custom step pe c_dev[1] c_dev[4] c_dev[7]
thermo_modify format float %.17g
thermo 2
velocity all create 300 4 loop geom
fix nve all nve
timestep 0.0005
fix stop all halt 2 v_maxdev > {bound!r} error continue
run 20"""
    _, _, run = run_ensemble(lammps, tmp_path, paths, keywords="", freq=2, extra=md)
    assert run.returncode == 0, run.output[-3000:]
    assert "Fix halt condition" in run.output, run.output[-2000:]
    rows = read_deviation(tmp_path / "devi.out")
    assert rows[-1, 0] == 2, rows[:, 0]    # stopped at the first check, not at step 20
    lines = run.output.splitlines()
    k = next(i for i, line in enumerate(lines) if line.split()[:2] == ["Step", "PotEng"])
    step0 = [float(v) for v in lines[k + 1].split()]
    assert step0[0] == 0
    assert_close([step0[2], step0[3], step0[4]], [rows[0, 1], rows[0, 4], rows[0, 7]], "compute pair vector")


def test_mismatched_cutoff_is_an_error_naming_both_files(lammps, tmp_path, ensemble):
    _, paths = ensemble
    other = write_model(tmp_path, "wider.safetensors", r_cut=3.0)
    _, _, run = run_ensemble(lammps, tmp_path, [paths[0], other])
    assert run.returncode != 0
    assert "different cutoffs" in run.output and paths[0].name in run.output and "wider.safetensors" in run.output


def test_mismatched_species_is_an_error_naming_both_files(lammps, tmp_path, ensemble):
    _, paths = ensemble
    other = write_model(tmp_path, "swapped.safetensors", species=("Cu", "C"))
    _, _, run = run_ensemble(lammps, tmp_path, [paths[0], other])
    assert run.returncode != 0
    assert "different species" in run.output and "swapped.safetensors" in run.output, run.output[-1500:]


def test_mismatched_architecture_on_two_ranks_is_an_error(lammps, tmp_path, ensemble):
    # One rank folds images and runs any two models; several ranks exchange features per layer.
    _, paths = ensemble
    other = write_model(tmp_path, "wide.safetensors", channels=16)
    _, _, one = run_ensemble(lammps, tmp_path, [paths[0], other])
    assert one.returncode == 0, one.output[-2000:]
    _, _, two = run_ensemble(lammps, tmp_path, [paths[0], other], nprocs=2)
    assert two.returncode != 0
    assert "differ in features per atom" in two.output and "wide.safetensors" in two.output, two.output[-1500:]


@pytest.mark.parametrize("keyword", ["relative", "relative_v"])
def test_a_relative_level_of_zero_is_an_error(lammps, tmp_path, ensemble, keyword):
    # With L = 0 an atom whose mean force is zero (or a zero virial component) would divide 0 by 0
    # and write NaN into the deviation file and compute pair.
    _, paths = ensemble
    _, _, run = run_ensemble(lammps, tmp_path, paths, keywords=f"{keyword} 0")
    assert run.returncode != 0
    assert f"{keyword} must be > 0 (got 0" in run.output, run.output[-1500:]


def test_deviation_keywords_without_an_ensemble_are_an_error(lammps, tmp_path, ensemble):
    _, paths = ensemble
    _, _, run = run_ensemble(lammps, tmp_path, [paths[0]])
    assert run.returncode != 0
    assert "give several potential files in pair_coeff" in run.output
