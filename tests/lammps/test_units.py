"""LAMMPS unit styles (doc/pair_edgeframe.md "Units"): the same system in units metal and in each
other unit style with physical units gives the same energy, forces and pressure, converted with
CODATA 2018 factors written here independently of LAMMPS' constants; an MD run in real units
follows the metal run's trajectory; units lj is refused."""

import numpy as np
import pytest

from reference_case import KOKKOS_ARGS, potential_io, random_init, structures, write_data

EV_J = 1.602176634e-19          # J per eV (exact, SI 2019)
HARTREE_EV = 27.211386245988    # eV per Hartree
BOHR_A = 0.529177210903         # Angstrom per Bohr
KCAL_MOL_EV = 23.060547830619   # kcal/mol per eV (eV * N_A / 4184 J)
# unit style: (LAMMPS energy unit per eV, LAMMPS distance unit per Angstrom, pressure unit in Pa)
UNITS = {
    "real": (KCAL_MOL_EV, 1.0, 101325.0),                  # kcal/mol, Angstrom, atm
    "electron": (1.0 / HARTREE_EV, 1.0 / BOHR_A, 1.0),      # Hartree, Bohr, Pa
    "si": (EV_J, 1e-10, 1.0),                              # J, m, Pa
    "cgs": (EV_J * 1e7, 1e-8, 0.1),                        # erg, cm, dyne/cm^2
    "micro": (EV_J / 1e-15, 1e-4, 1e3),                    # picogram um^2/us^2, um, picogram/(um us^2)
    "nano": (EV_J / 1e-21, 1e-1, 1e6),                     # attogram nm^2/ns^2, nm, attogram/(nm ns^2)
}
BAR_PA = 1e5
# LAMMPS' own constants (boltz per unit style, force->angstrom, nktv2p) are older CODATA values
# than the factors above: they agree to about 1e-7 relative (e.g. real's boltz ratio 23.0605479
# against 23.0605478).
REL_TOL = 1e-6

SCRIPT = """
units {units}
atom_style atomic
boundary p p p
atom_modify map array
read_data data.lmp
neighbor {skin!r} bin
pair_style edgeframe precision fp64
pair_coeff * * {model} C Cu
thermo_style custom step pe pxx pyy pzz pxy pxz pyz
thermo_modify format float %.17g
dump d all custom 1 forces.dump id fx fy fz
dump_modify d format float %.17g sort id
{extra}
"""


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    cfg = random_init.make_config("L2", lmax=2, mmax=2, r_cut=2.8, layers=2, channels=8, hidden_channels=8,
                                  ffn_channels=8, radial_hidden=16, readout_hidden=8, edge_emb=4, avg_neighbors=20.0)
    path = tmp_path_factory.mktemp("units") / "small.safetensors"
    potential_io.write_potential(path, random_init.random_model(cfg, seed=5))
    return path


def run_in_units(lammps, folder, model_path, units, extra="run 0 post no", args=()):
    """The rattled diamond cell, its lengths converted into the unit style's distance unit."""
    folder.mkdir(exist_ok=True)
    length = 1.0 if units == "metal" else UNITS[units][1]
    atoms = structures.rattle(structures.diamond((2, 2, 2)), 0.05, seed=1)
    atoms.positions, atoms.cell = atoms.positions * length, atoms.cell * length
    write_data(folder / "data.lmp", atoms, ["C", "Cu"])
    lammps.workdir = folder
    run = lammps(SCRIPT.format(units=units, skin=1.0 * length, model=model_path, extra=extra), args=args)
    assert run.returncode == 0, run.output[-3000:]
    lines = run.output.splitlines()
    k = next(i for i, line in enumerate(lines) if line.split()[:2] == ["Step", "PotEng"])
    thermo = np.array([float(v) for v in lines[k + 1].split()])
    rows = (folder / "forces.dump").read_text().splitlines()
    start = next(i for i, line in enumerate(rows) if line.startswith("ITEM: ATOMS")) + 1
    forces = np.array([[float(v) for v in line.split()[1:]] for line in rows[start:start + len(atoms)]])
    return thermo, forces, run.output


def close(a, b, rel=REL_TOL):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a - b).max() <= rel * np.abs(b).max()


@pytest.mark.parametrize("units", list(UNITS))
def test_same_physics_as_metal(lammps, tmp_path, model_path, units):
    metal, f_metal, _ = run_in_units(lammps, tmp_path / "metal", model_path, "metal")
    other, f_other, _ = run_in_units(lammps, tmp_path / units, model_path, units)
    energy, length, pressure = UNITS[units]
    assert abs(metal[1]) > 1e-3 and np.abs(f_metal).max() > 1e-2    # not a comparison of zeros
    assert close(other[1], metal[1] * energy), (other[1], metal[1] * energy)
    assert close(f_other, f_metal * energy / length)
    assert close(other[2:8] * pressure, metal[2:8] * BAR_PA), (other[2:8] * pressure, metal[2:8] * BAR_PA)


def test_kokkos_style_in_real_units(lammps, tmp_path, model_path):
    metal, f_metal, _ = run_in_units(lammps, tmp_path / "metal", model_path, "metal", args=KOKKOS_ARGS)
    real, f_real, output = run_in_units(lammps, tmp_path / "real", model_path, "real", args=KOKKOS_ARGS)
    assert "pair edgeframe/kk" in output
    assert close(real[1], metal[1] * KCAL_MOL_EV)
    assert close(f_real, f_metal * KCAL_MOL_EV)


def test_md_trajectory_in_real_units_follows_metal(lammps, tmp_path, model_path):
    # 0.5 fs in both (metal: ps, real: fs); the same masses (g/mol) and velocities (A/ps vs A/fs).
    md = ("mass * 12.011\nvelocity all set 0.0 0.0 0.0\nfix nve all nve\ntimestep {dt}\nrun 40 post no\n"
          "write_dump all custom final.dump id x y z modify format float %.17g sort id")
    for units, dt in (("metal", 0.0005), ("real", 0.5)):
        run_in_units(lammps, tmp_path / units, model_path, units, extra=md.format(dt=dt))
    final = {}
    for units in ("metal", "real"):
        rows = (tmp_path / units / "final.dump").read_text().splitlines()
        start = next(i for i, line in enumerate(rows) if line.startswith("ITEM: ATOMS")) + 1
        final[units] = np.array([[float(v) for v in line.split()[1:]] for line in rows[start:]])
    start = np.array(structures.rattle(structures.diamond((2, 2, 2)), 0.05, seed=1).positions)
    moved = np.abs(final["metal"] - start).max()
    assert moved > 1e-3, moved    # the atoms moved: the comparison is of a trajectory
    assert np.abs(final["real"] - final["metal"]).max() < 1e-6 * max(moved, 1.0)


def test_lj_units_are_refused(lammps, tmp_path, model_path):
    write_data(tmp_path / "data.lmp", structures.diamond((1, 1, 1)), ["C", "Cu"])
    run = lammps(SCRIPT.format(units="lj", skin=0.3, model=model_path, extra="run 0 post no"))
    assert run.returncode != 0
    assert "cannot run in 'units lj'" in run.output and "real, metal" in run.output
