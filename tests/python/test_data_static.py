"""The near-equilibrium static frames of tools/data (doc/data.md, tools/datagen/static.py) hold
what they claim: the perfect lattice at the classical potential's own a0 is a minimum (no force,
no virial beyond rounding), a small strain raises the energy quadratically and symmetrically,
a displaced atom feels a restoring force that grows linearly with the displacement, the
isolated atom has the reference's free-atom energy, and the split by trajectory keeps every
static family in train, validation and test."""

import json

import numpy as np
import pytest
from conftest import ROOT

DATA = ROOT / "tools" / "data"


def load(element):
    arrays = dict(np.load(DATA / f"{element}.npz"))
    meta = json.loads((DATA / f"{element}.json").read_text())
    offs = np.concatenate([[0], np.cumsum(arrays["n_atoms"])])
    return arrays, meta, offs


def frames_of(meta, name):
    t = next(t for t in meta["trajectories"] if t["name"].endswith(name))
    return range(*t["frames"])


LATTICES = {"C": ["diamond"], "Cu": ["fcc", "bcc"]}


@pytest.mark.parametrize("element", ["C", "Cu"])
def test_perfect_lattice_is_a_minimum(element):
    arrays, meta, offs = load(element)
    for lat in LATTICES[element]:
        f = frames_of(meta, f"lattice/{lat}_perfect_s1.0")[0]
        n = arrays["n_atoms"][f]
        assert np.abs(arrays["forces"][offs[f]:offs[f + 1]]).max() < 1e-8
        assert np.abs(arrays["virial"][f]).max() / n < 1e-4        # eV/atom: the relaxed a0's rounding
        # the equation of state's energies rise on both sides of a0
        e = {s: arrays["energy"][frames_of(meta, f"lattice/{lat}_perfect_s{s}")[0]] / n
             for s in (0.98, 0.99, 1.0, 1.01, 1.02)}
        assert e[0.99] > e[1.0] < e[1.01] and e[0.98] > e[0.99] and e[1.02] > e[1.01]


@pytest.mark.parametrize("element", ["C", "Cu"])
def test_small_strains_are_harmonic(element):
    arrays, meta, _ = load(element)
    lat = LATTICES[element][0]
    e0 = arrays["energy"][frames_of(meta, f"lattice/{lat}_perfect_s1.0")[0]]
    # strains 0..3: exx = +0.5 %, -0.5 %, +1 %, -1 % (first frame of each: no rattle)
    de = [arrays["energy"][frames_of(meta, f"lattice/{lat}_strain{k}")[0]] - e0 for k in range(4)]
    assert min(de) > 0
    assert de[0] == pytest.approx(de[1], rel=0.05) and de[2] == pytest.approx(de[3], rel=0.05)
    assert (de[2] + de[3]) / (de[0] + de[1]) == pytest.approx(4.0, rel=0.02)


@pytest.mark.parametrize("element", ["C", "Cu"])
def test_displaced_atom_feels_a_linear_restoring_force(element):
    arrays, meta, offs = load(element)
    lat = LATTICES[element][0]
    fx = [arrays["forces"][offs[f], 0] for f in frames_of(meta, f"lattice/{lat}_phonon100")]
    d = np.array([0.005, 0.01, 0.02, 0.04, 0.08])
    assert all(v < 0 for v in fx)
    k = -np.array(fx) / d
    assert k[1] == pytest.approx(k[0], rel=0.02)         # harmonic at the smallest displacements


@pytest.mark.parametrize("element", ["C", "Cu"])
def test_isolated_atom_and_split(element):
    arrays, meta, _ = load(element)
    f = frames_of(meta, "atom/isolated")[0]
    assert arrays["n_atoms"][f] == 1
    # A free atom has E = 0 in Tersoff's form and in the EAM form; Mishin's tabulated embedding
    # function has F(0) = 5e-6 eV (the table's first entry), which is what LAMMPS returns.
    assert abs(arrays["energy"][f]) < (1e-12 if element == "C" else 1e-5)
    for family in ("lattice", "relaxed", "atom"):
        splits = {t["split"] for t in meta["trajectories"] if t["family"] == family}
        assert splits == {"train", "val", "test"}, family


def test_copper_stacking_polytypes_follow_the_fault_energy():
    """The close-packed polytypes (family 'stacking') are the stackings they are named after: fcc
    in their cell is the perfect lattice, every other one lies above it, and their energies over
    fcc obey the axial next-nearest-neighbour Ising picture that links them to the relaxed
    intrinsic fault of the 'relaxed' family (E(dhcp) = E(hcp) / 2, E(6H) = E(hcp) / 3,
    E(9R) = 2 E(hcp) / 3 over fcc per atom, and gamma_ISF = 2 (E_hcp - E_fcc) / A per atom)."""
    arrays, meta, offs = load("Cu")
    per_atom = lambda name: (arrays["energy"][frames_of(meta, name)[0]]  # noqa: E731
                             / arrays["n_atoms"][frames_of(meta, name)[0]])
    e_fcc = per_atom("lattice/fcc_perfect_s1.0")
    assert per_atom("stacking/fcc_s1.0") == pytest.approx(e_fcc, abs=1e-9)
    de = {p: per_atom(f"stacking/{p}_s1.0") - e_fcc for p in ("hcp", "dhcp", "6H", "9R")}
    assert 5e-3 < de["hcp"] < 1.2e-2        # eV/atom; Mishin EAM1 is 7.9 meV/atom
    assert de["dhcp"] == pytest.approx(de["hcp"] / 2, rel=1e-3)
    assert de["6H"] == pytest.approx(de["hcp"] / 3, rel=1e-3)
    assert de["9R"] == pytest.approx(2 * de["hcp"] / 3, rel=1e-3)
    f = frames_of(meta, "relaxed/fcc_stacking_fault")[0]
    n = arrays["n_atoms"][f]
    cell = arrays["cell"][f]
    area = abs(np.cross(cell[0], cell[1])[2])
    gamma = (arrays["energy"][f] - n * e_fcc) / area                 # eV/A^2, one fault per cell
    a_atom = area / (n / 9)                                          # 9 (111) layers
    assert gamma == pytest.approx(2 * de["hcp"] / a_atom, rel=0.02)   # relaxed: 0.4 % below
    splits = {t["split"] for t in meta["trajectories"] if t["family"] == "stacking"}
    assert splits == {"train", "val", "test"}
