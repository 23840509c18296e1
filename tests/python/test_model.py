"""Model-level checks: roll, rotation, translation and permutation invariance; forces and
virial against finite differences; per-atom quantities; precision; every weight matters."""

import math

import numpy as np
import pytest
import torch

from conftest import LM_CASES, small_model
from edgeframe_ref.calc import energy_only, evaluate
from edgeframe_ref.config import parameter_shapes
from edgeframe_ref.neighbors import neighbor_list
from edgeframe_ref.structures import Atoms, axis_cluster, bcc, rattle, triclinic_two_species

R_CUT = 3.2
# Invariances hold exactly in exact arithmetic; float64 rounding of O(10) eV totals and O(0.1)
# eV/A forces stays far below these.
TOL_INV_E = 1e-11      # relative, energy
TOL_INV_F = 1e-10      # absolute eV/A, forces (forces are O(0.01..0.1))
# Central 4-point finite differences, step 1e-3 A: truncation ~h^4 E^(5)/30 ~ 1e-14,
# rounding ~ 1e-15 * |E| / h ~ 1e-11; the brief's bound is 1e-7 relative.
FD_STEP = 1e-3
TOL_FD_REL = 1e-7      # relative to the largest force / virial component
EDGE_MARGIN = 0.02     # A: no edge within this of r_cut, so the C2 envelope is smooth under FD


def periodic_system():
    # seed 7: no edge within 0.03 A of R_CUT (see check_cutoff_margin)
    return triclinic_two_species(seed=7)


def cluster_system():
    return axis_cluster()


def check_cutoff_margin(atoms, model):
    """The finite-difference checks are only valid if no edge sits near r_cut."""
    pos = atoms.positions
    i, j, s = neighbor_list(pos, atoms.cell, atoms.pbc, model.cfg.r_cut + EDGE_MARGIN)
    d = np.linalg.norm(pos[j.numpy()] - pos[i.numpy()] + s.numpy() @ atoms.cell, axis=1)
    assert (np.abs(d - model.cfg.r_cut) > EDGE_MARGIN).all(), "test system has an edge near r_cut"
    assert (d < model.cfg.r_cut).sum() > 0


def fd_derivative(f, h=FD_STEP):
    """Central 4-point stencil for d f(t)/dt at t = 0."""
    return (8 * (f(h) - f(-h)) - (f(2 * h) - f(-2 * h))) / (12 * h)


def random_rotation(seed):
    g = torch.Generator().manual_seed(seed)
    q, r = torch.linalg.qr(torch.randn(3, 3, dtype=torch.float64, generator=g))
    q = q * torch.sign(torch.diagonal(r))
    if torch.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q.numpy()


def rel_err(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


# ------------------------------------------------------------------------- invariances
@pytest.mark.parametrize("lmax,mmax", LM_CASES)
def test_roll_invariance(lmax, mmax):
    model = small_model(lmax, mmax, seed=lmax + 10 * mmax, r_cut=R_CUT)
    for atoms in (cluster_system(), periodic_system()):
        ref = evaluate(model, atoms)
        n_edges = len(ref["edges"][0])
        for seed in range(2):
            g = torch.Generator().manual_seed(seed)
            roll = torch.rand(n_edges, dtype=torch.float64, generator=g) * 2 * math.pi
            out = evaluate(model, atoms, edges=ref["edges"], roll=roll)
            assert abs(out["energy"] - ref["energy"]) <= TOL_INV_E * abs(ref["energy"])
            assert np.abs(out["energies"] - ref["energies"]).max() < TOL_INV_E * 10
            assert np.abs(out["forces"] - ref["forces"]).max() < TOL_INV_F


@pytest.mark.parametrize("lmax,mmax", LM_CASES)
def test_rotation_invariance(lmax, mmax):
    model = small_model(lmax, mmax, seed=3 + lmax, r_cut=R_CUT)
    for k, atoms in enumerate((cluster_system(), periodic_system())):
        ref = evaluate(model, atoms)
        q = random_rotation(100 + k + lmax)
        rot = atoms.copy()
        rot.positions = atoms.positions @ q.T
        rot.cell = atoms.cell @ q.T
        out = evaluate(model, rot)
        assert abs(out["energy"] - ref["energy"]) <= TOL_INV_E * abs(ref["energy"])
        assert np.abs(out["energies"] - ref["energies"]).max() < TOL_INV_E * 10
        assert np.abs(out["forces"] - ref["forces"] @ q.T).max() < TOL_INV_F
        assert np.abs(out["virial"] - q @ ref["virial"] @ q.T).max() < TOL_INV_F
        assert np.abs(out["atom_virial"] - q @ ref["atom_virial"] @ q.T).max() < TOL_INV_F


@pytest.mark.parametrize("lmax,mmax", [(2, 1), (3, 2)])
def test_translation_and_wrapping_invariance(lmax, mmax):
    model = small_model(lmax, mmax, r_cut=R_CUT)
    for atoms in (cluster_system(), periodic_system()):
        ref = evaluate(model, atoms)
        moved = atoms.copy()
        moved.positions = atoms.positions + np.array([0.37, -1.91, 12.3])
        if all(atoms.pbc):   # also move some atoms by lattice vectors
            moved.positions[::3] += atoms.cell[0] - 2 * atoms.cell[2]
        out = evaluate(model, moved)
        assert abs(out["energy"] - ref["energy"]) <= TOL_INV_E * abs(ref["energy"])
        assert np.abs(out["forces"] - ref["forces"]).max() < TOL_INV_F
        assert np.abs(out["virial"] - ref["virial"]).max() < TOL_INV_F


@pytest.mark.parametrize("lmax,mmax", [(2, 1), (3, 2)])
def test_permutation_invariance(lmax, mmax):
    model = small_model(lmax, mmax, r_cut=R_CUT)
    for atoms in (cluster_system(), periodic_system()):
        ref = evaluate(model, atoms)
        perm = np.random.default_rng(5).permutation(len(atoms))
        p = Atoms(atoms.positions[perm], atoms.cell, atoms.pbc, [atoms.symbols[k] for k in perm])
        out = evaluate(model, p)
        assert abs(out["energy"] - ref["energy"]) <= TOL_INV_E * abs(ref["energy"])
        assert np.abs(out["energies"] - ref["energies"][perm]).max() < TOL_INV_E * 10
        assert np.abs(out["forces"] - ref["forces"][perm]).max() < TOL_INV_F
        assert np.abs(out["atom_virial"] - ref["atom_virial"][perm]).max() < TOL_INV_F


def test_supercell_extensive():
    # bcc with a = 2.87 < r_cut: every atom sees its own images; a 2x1x3 supercell must give
    # exactly the same per-atom energies and forces
    model = small_model(3, 2, r_cut=R_CUT)
    cell = rattle(bcc((1, 1, 1)), 0.1, 4)
    sup = Atoms(np.concatenate([cell.positions + np.array([a, 0, c]) @ cell.cell
                                for a in range(2) for c in range(3)]),
                cell.cell * np.array([[2], [1], [3]]), cell.pbc, cell.symbols * 6)
    one, many = evaluate(model, cell), evaluate(model, sup)
    assert abs(many["energy"] - 6 * one["energy"]) < TOL_INV_E * abs(many["energy"])
    assert np.abs(many["forces"] - np.tile(one["forces"], (6, 1))).max() < TOL_INV_F
    assert np.abs(many["virial"] - 6 * one["virial"]).max() < TOL_INV_F * 6


# ------------------------------------------------------------------------- derivatives
@pytest.mark.parametrize("lmax,mmax", LM_CASES)
def test_forces_finite_difference_cluster(lmax, mmax):
    model = small_model(lmax, mmax, seed=7 * lmax + mmax, r_cut=R_CUT)
    atoms = cluster_system()
    check_cutoff_margin(atoms, model)
    forces = evaluate(model, atoms)["forces"]
    fd = np.zeros_like(forces)
    for a in range(len(atoms)):
        for c in range(3):
            def e(t, a=a, c=c):
                moved = atoms.copy()
                moved.positions[a, c] += t
                return energy_only(model, moved)
            fd[a, c] = -fd_derivative(e)
    assert rel_err(forces, fd) < TOL_FD_REL, f"relative error {rel_err(forces, fd):.2e}"


@pytest.mark.parametrize("lmax,mmax", [(2, 1), (3, 2), (4, 2)])
def test_forces_finite_difference_periodic(lmax, mmax):
    model = small_model(lmax, mmax, seed=lmax, r_cut=R_CUT)
    atoms = periodic_system()
    check_cutoff_margin(atoms, model)
    forces = evaluate(model, atoms)["forces"]
    for a in (0, 5, 11):
        fd = np.zeros(3)
        for c in range(3):
            def e(t, c=c):
                moved = atoms.copy()
                moved.positions[a, c] += t
                return energy_only(model, moved)
            fd[c] = -fd_derivative(e)
        err = np.abs(forces[a] - fd).max() / np.abs(forces).max()
        assert err < TOL_FD_REL, f"atom {a}: relative error {err:.2e}"


def strained(atoms, eps):
    out = atoms.copy()
    m = np.eye(3) + eps
    out.positions = atoms.positions @ m.T
    out.cell = atoms.cell @ m.T
    return out


@pytest.mark.parametrize("lmax,mmax", LM_CASES)
def test_virial_finite_strain(lmax, mmax):
    # W_ab = -sum_e r_a dE/dr_b = -dE/d(eps_ba) for x -> (1 + eps) x, cell -> (1 + eps) cell
    model = small_model(lmax, mmax, seed=11 * lmax + mmax, r_cut=R_CUT)
    for atoms in (periodic_system(), cluster_system()):
        check_cutoff_margin(atoms, model)
        virial = evaluate(model, atoms)["virial"]
        fd = np.zeros((3, 3))
        for a in range(3):
            for b in range(3):
                def e(t, a=a, b=b):
                    eps = np.zeros((3, 3))
                    eps[a, b] = t
                    return energy_only(model, strained(atoms, eps))
                fd[b, a] = -fd_derivative(e)
        assert rel_err(virial, fd) < TOL_FD_REL, f"relative error {rel_err(virial, fd):.2e}"
        assert np.abs(virial - virial.T).max() < 1e-12 * np.abs(virial).max()


@pytest.mark.parametrize("lmax,mmax", [(1, 1), (3, 2)])
def test_per_atom_sums(lmax, mmax):
    model = small_model(lmax, mmax, r_cut=R_CUT)
    for atoms in (cluster_system(), periodic_system()):
        out = evaluate(model, atoms)
        assert abs(out["energies"].sum() - out["energy"]) < 1e-12 * abs(out["energy"])
        assert np.abs(out["atom_virial"].sum(0) - out["virial"]).max() < 1e-13
        assert np.abs(out["forces"].sum(0)).max() < 1e-13   # Newton's third law


def test_smooth_at_cutoff():
    # a C-Cu dimer: energy and force go continuously to the isolated-atom values at r_cut
    model = small_model(3, 2, r_cut=R_CUT)

    def dimer(r):
        return Atoms(np.array([[0.0, 0, 0], [r * 0.6, r * 0.8, 0]]), np.zeros((3, 3)),
                     (False,) * 3, ["C", "Cu"])
    far = evaluate(model, dimer(R_CUT + 0.5))
    assert far["energy"] == pytest.approx(sum(model.cfg.e0.values()) + far["energy"]
                                          - sum(model.cfg.e0.values()))
    e_far = far["energy"]
    for delta in (1e-2, 1e-3):
        near = evaluate(model, dimer(R_CUT - delta))
        assert abs(near["energy"] - e_far) < 50 * delta ** 3      # u = O((1-x)^3)
        assert np.abs(near["forces"]).max() < 50 * delta ** 2
    exact = evaluate(model, dimer(R_CUT))
    assert exact["energy"] == e_far and len(exact["edges"][0]) == 0


# ------------------------------------------------------------------------- precision, weights
def test_float32_matches_float64():
    m64 = small_model(3, 2, r_cut=R_CUT)
    m32 = small_model(3, 2, r_cut=R_CUT, dtype=torch.float32)
    atoms = periodic_system()
    a, b = evaluate(m64, atoms), evaluate(m32, atoms)
    assert next(m32.parameters()).dtype == torch.float32
    assert abs(a["energy"] - b["energy"]) < 1e-5 * abs(a["energy"])
    assert np.abs(a["forces"] - b["forces"]).max() < 1e-5 * np.abs(a["forces"]).max() + 1e-7


def structurally_dead(name, layers):
    """Parameters that cannot act (doc/model.md, "Parameters without effect"): the m > 0 SO(2)
    blocks of layer 0 (all l > 0 features are still zero) and of the last layer (only l = 0
    reaches the readout), and the last layer's feed-forward gates (they only scale l >= 1)."""
    first, last = "layers.0.", f"layers.{layers - 1}."
    so2_m = ".so2_" in name and ".m0." not in name
    return (so2_m and (name.startswith(first) or name.startswith(last))) or \
        name.startswith(last + "ffn.gate.")


@pytest.mark.parametrize("lmax,mmax", [(2, 1), (3, 2)])
def test_every_weight_matters(lmax, mmax):
    # Every parameter tensor gets a nonzero gradient of the energy, except the structurally
    # dead ones, which must get exactly zero (that is part of the contract too).
    model = small_model(lmax, mmax, r_cut=R_CUT, layers=3)
    atoms = periodic_system()
    model.zero_grad()
    from edgeframe_ref.calc import build_edges, species_indices
    from edgeframe_ref.neighbors import edge_vectors
    i, j, s = build_edges(model, atoms)
    vec = edge_vectors(torch.as_tensor(atoms.positions), atoms.cell, i, j, s)
    model(species_indices(model, atoms.symbols), i, j, vec).sum().backward()
    n_dead = 0
    for name in parameter_shapes(model.cfg):
        g = model.get_parameter(name).grad
        if structurally_dead(name, model.cfg.layers):
            n_dead += 1
            assert g is None or g.abs().max() == 0, name
        else:
            assert g is not None and g.abs().max() > 0, f"{name} has no effect on the energy"
    assert n_dead == 2 * 4 * mmax + 2   # 2 layers x (so2_1, so2_2) x (W_r, W_i) per m, + gate


def test_edge_chunking_changes_nothing():
    model = small_model(3, 2, r_cut=R_CUT, layers=3)
    atoms = periodic_system()
    a = evaluate(model, atoms)
    model.edge_chunk = 97      # several chunks, the last one partial
    b = evaluate(model, atoms)
    assert abs(a["energy"] - b["energy"]) <= 1e-14 * abs(a["energy"])
    assert np.abs(a["forces"] - b["forces"]).max() < 1e-14
    assert np.abs(a["virial"] - b["virial"]).max() < 1e-13


@pytest.mark.parametrize("lmax,mmax", [(2, 1), (3, 2)])
def test_continuous_across_chart_switch(lmax, mmax):
    # A C-Cu-C trimer whose first bond sits on the chart switch: walk the bond's y component
    # ulp by ulp across |n_y| = 0.9 and take the last geometry in chart 1 and the first in
    # chart 2. Their frames differ by a finite roll; energy and forces only by rounding.
    from edgeframe_ref.band import edge_frame
    model = small_model(lmax, mmax, r_cut=R_CUT)
    x = 2.0 * math.sqrt(1 - 0.81)
    y = 1.8 - 20 * math.ulp(1.8)
    charts = []
    for _ in range(40):
        vec = torch.tensor([[x, y, 0.0]], dtype=torch.float64)
        charts.append((bool(edge_frame(vec)[3][0]), y))
        y = math.nextafter(y, 2.0)
    # rounding in n = r/|r| may flip the chart back and forth for a few ulps: take the first
    # neighbouring pair (chart 1, chart 2)
    flags = [c for c, _ in charts]
    k = next(k for k in range(1, len(flags)) if flags[k] and not flags[k - 1])

    def trimer(yb):
        return Atoms(np.array([[0.0, 0, 0], [x, yb, 0.0], [0.4, -1.1, 1.5]]), np.zeros((3, 3)),
                     (False,) * 3, ["C", "Cu", "C"])
    a, b = evaluate(model, trimer(charts[k - 1][1])), evaluate(model, trimer(charts[k][1]))
    assert abs(a["energy"] - b["energy"]) < 1e-13 * abs(a["energy"])
    assert np.abs(a["forces"] - b["forces"]).max() < 1e-12
