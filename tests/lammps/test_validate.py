"""The validation suite tools/validate (doc/validation.md): its phonon and fit code against
known answers, its LAMMPS runner, and whole runs of the suite.

The phonon code is checked against a nearest-neighbour spring model whose dynamical matrix is
known in closed form, and on the classical Tersoff diamond in LAMMPS (acoustic sum rule at
Gamma, independence of the displacement size, the Gamma optical frequency against a frozen
phonon's energy). The suite run with the classical potential as the model (--self-check) must
give error 0 and pass on every row; a broken potential file must become "failed" rows, not a
crash; the shipped carbon potential must give numbers through the plugin.
"""
import itertools
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VALIDATE = ROOT / "tools" / "validate"
sys.path.insert(0, str(VALIDATE))

import crystal  # noqa: E402
import phonons as ph  # noqa: E402
from fit import birch_murnaghan  # noqa: E402
from lmp import A0_CLASSICAL, Failed, Runner  # noqa: E402

# finite differences of the anharmonic spring (+-1e-3 A) against the closed form: the error is
# O(h^2) relative, ~1e-6 of the frequencies
SPRING_TOL_THZ = 1e-3
# Gamma acoustic frequencies with the image-weighted sum: sum_j Phi = 0 up to the rounding of
# LAMMPS' forces (1e-12 eV/A relative), so |f| stays far below 0.01 THz
ACOUSTIC_TOL_THZ = 0.01
# +-0.01 A against +-0.005 A central differences on Tersoff diamond: anharmonic terms change
# the frequencies by O(h^2) ~ 1e-4 relative
DISPLACEMENT_TOL = 1e-3
# frozen phonon of +-0.002 / 0.004 A (quadratic fit) against the dynamical matrix at Gamma
FROZEN_TOL = 2e-3


def spring_forces(pos, cell, r_nn, k):
    """Central springs k (eV/A^2) of rest length r_nn between nearest neighbours."""
    d = pos[None, :, :] - pos[:, None, :]
    frac = d @ np.linalg.inv(cell)
    d = (frac - np.round(frac)) @ cell
    r = np.sqrt((d ** 2).sum(-1))
    np.fill_diagonal(r, np.inf)
    nn = r < 1.1 * r_nn
    coef = np.where(nn, k * (r - r_nn) / np.where(nn, r, 1.0), 0.0)
    return (coef[..., None] * d).sum(1)


def spring_reference(q, lattice, a, k, m):
    """Closed-form dynamical matrix of the nearest-neighbour spring model."""
    if lattice == "fcc":
        nn = [np.array(v) * a for v in itertools.product((-.5, 0, .5), repeat=3)
              if np.isclose(np.linalg.norm(v), 2 ** -.5)]
        return sum((1 - np.cos(q @ v)) * np.outer(v, v) / (v @ v) for v in nn) * k / m
    nn = [np.array(v) * a / 4 for v in ([1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1])]
    s = sum(np.outer(v, v) / (v @ v) for v in nn) * k / m
    t = -sum(np.outer(v, v) / (v @ v) * np.exp(1j * (q @ v)) for v in nn) * k / m
    return np.block([[s, t], [t.conj().T, s]])


@pytest.mark.parametrize("lattice,reps", [("fcc", 3), ("diamond", 2)])
def test_dynamical_matrix_equals_closed_form_spring_model(lattice, reps):
    a, k, m = 3.6, 7.0, 12.0
    pos, cell = crystal.bulk(lattice, a, reps)
    nb = len(crystal.PRIMITIVE[lattice][1])
    sites = [0, 4] if nb == 2 else [0]
    site_of = (np.arange(len(pos)) % 8 >= 4).astype(int) if nb == 2 else np.zeros(len(pos), int)
    r_nn = a / 2 ** 0.5 if lattice == "fcc" else a * 3 ** 0.5 / 4
    h = 1e-3
    forces = [spring_forces(p, cell, r_nn, k) for *_, p in ph.displaced_configs(pos, sites, h)]
    dyn = ph.Dynamical(ph.force_constants(forces, sites, h), pos, cell, sites, site_of, [m] * nb)
    qs, _, _ = ph.fcc_path(a, 8)
    worst = 0.0
    for q in qs:
        lam = np.linalg.eigvalsh(spring_reference(q, lattice, a, k, m))
        f_ref = np.sign(lam) * np.sqrt(np.abs(lam)) * ph.THZ_PER_UNIT
        worst = max(worst, float(np.abs(dyn.frequencies(q) - f_ref).max()))
    assert worst < SPRING_TOL_THZ, f"{lattice}: {worst} THz off the closed form"


def test_birch_murnaghan_recovers_its_parameters():
    v0, e0, b0_gpa, bp = 11.7, -3.2, 137.0, 4.6
    b0 = b0_gpa / 160.21766208
    v = np.linspace(0.9, 1.1, 9) * v0
    x = (v0 / v) ** (2 / 3)
    e = e0 + 9 * v0 * b0 / 16 * ((x - 1) ** 3 * bp + (x - 1) ** 2 * (6 - 4 * x))
    fit = birch_murnaghan(v, e)
    assert fit["V0"] == pytest.approx(v0, rel=1e-9)
    assert fit["B0_GPa"] == pytest.approx(b0_gpa, rel=1e-7)
    assert fit["Bp"] == pytest.approx(bp, rel=1e-5)
    with pytest.raises(ValueError):                      # no minimum inside the range
        birch_murnaghan(v[:5], e[:5] - 10 * v[:5])


def nearest_neighbours(pos, cell, cut):
    d = pos[None] - pos[:, None]
    frac = d @ np.linalg.inv(cell)
    d = (frac - np.round(frac)) @ cell
    r = np.sqrt((d ** 2).sum(-1))
    np.fill_diagonal(r, np.inf)
    return r.min(), (r < cut).sum(1)


def test_stacking_fault_cell_keeps_twelve_neighbours_and_changes_stacking():
    a = 3.615
    # in-plane 4 x 2 periods: wide enough (> 2 x 1.18 a) for minimum-image neighbour counts
    (p0, c0), (p1, c1), area = crystal.stacking_fault(a, (4, 2, 3))
    assert area == pytest.approx(4 * a / 2 ** 0.5 * 2 * a * 1.5 ** 0.5)
    for p, c in ((p0, c0), (p1, c1)):
        dmin, n = nearest_neighbours(p, c, 1.05 * a / 2 ** 0.5)
        assert dmin == pytest.approx(a / 2 ** 0.5, rel=1e-9)
        assert np.all(n == 12)
    # within 1.18 a: fcc has 12 + 6 (at a). Stacking ABC|BCA (intrinsic) puts layers 2 and 4,
    # 3 and 5 of ABCBCA in the same position, 1.155 a apart: 4 layers with one atom more
    _, n2p = nearest_neighbours(p0, c0, 1.18 * a)
    _, n2f = nearest_neighbours(p1, c1, 1.18 * a)
    per_layer = len(p0) // 9
    assert np.all(n2p == 18) and set(n2f) == {18, 19} and (n2f == 19).sum() == 4 * per_layer


def test_stacked_cells_are_fcc_and_hcp():
    """crystal.stacked: ABC is fcc (12 neighbours at a / sqrt 2, 6 more within 1.18 a), AB ideal
    hcp (the same 12 and 6, and 2 more at sqrt(8 / 3) a / sqrt 2 = 1.155 a across two layers)."""
    a = 3.615
    for seq, nz, n_second in (("ABC", 2, 18), ("AB", 3, 20)):
        p, c = crystal.stacked(a, seq, (2, 2, nz))
        assert len(p) == 16 * len(seq) * nz
        dmin, n = nearest_neighbours(p, c, 1.05 * a / 2 ** 0.5)
        assert dmin == pytest.approx(a / 2 ** 0.5, rel=1e-9) and np.all(n == 12)
        _, n2 = nearest_neighbours(p, c, 1.18 * a)
        assert np.all(n2 == n_second), seq


def test_slab_cuts_diamond_111_between_bilayers():
    a = 3.566
    p, cell, area = crystal.slab("diamond", a, "111", (1, 1, 2), 15.0)
    z = np.sort(np.unique(np.round(p[:, 2], 6)))
    gaps = np.diff(z)
    assert len(p) == 24 and area == pytest.approx(a / 2 ** 0.5 * a * 1.5 ** 0.5)
    # the outermost gaps are the short ones (a sqrt 3 / 12) inside a bilayer
    assert gaps[0] == pytest.approx(a * 3 ** 0.5 / 12, abs=1e-5)
    assert gaps[-1] == pytest.approx(a * 3 ** 0.5 / 12, abs=1e-5)
    assert cell[2, 2] - (z[-1] - z[0]) > 15.0


@pytest.fixture
def lmp_env(request):
    lmp = request.config.getoption("--lmp")
    if "LAMMPS_POTENTIALS" not in os.environ:
        pytest.fail("LAMMPS_POTENTIALS is not set: source $(scripts/bootstrap.sh --print-env)")
    return lmp


def test_runner_turns_a_lammps_error_into_one_failed_configuration(lmp_env, tmp_path):
    run = Runner("C", "unused", "unused", lmp=lmp_env, workdir=tmp_path)
    pos, cell = crystal.bulk("diamond", A0_CLASSICAL[("C", "diamond")], 1)
    res = run.run("reference", [dict(pos=pos, cell=cell), dict(pos=pos, cell=cell, cmds=["no_such_command"]),
                                dict(pos=pos * 1.01, cell=cell * 1.01)], "t")
    assert isinstance(res[1], Failed) and "no_such_command" in res[1].reason
    assert res[0]["pe"] / 8 == pytest.approx(-7.37, abs=0.01)     # Tersoff 1989 C: -7.37 eV/atom
    assert res[2]["pe"] > res[0]["pe"]


def tersoff_dynamical(run, a, h):
    pos, cell = crystal.bulk("diamond", a, 2)
    cfgs = ph.displaced_configs(pos, [0, 4], h)
    res = run.run("reference", [dict(pos=p, cell=cell, forces=True) for *_, p in cfgs], f"h{h}")
    phi = ph.force_constants([r["forces"] for r in res], [0, 4], h)
    return ph.Dynamical(phi, pos, cell, [0, 4], (np.arange(len(pos)) % 8 >= 4).astype(int),
                        [12.011] * 2), pos, cell


def test_tersoff_phonons_sum_rule_displacement_size_and_frozen_phonon(lmp_env, tmp_path):
    run = Runner("C", "unused", "unused", lmp=lmp_env, workdir=tmp_path)
    a = A0_CLASSICAL[("C", "diamond")]
    d1, pos, cell = tersoff_dynamical(run, a, 0.01)
    d2, _, _ = tersoff_dynamical(run, a, 0.005)
    qs, _, _ = ph.fcc_path(a, 6)
    f1 = np.array([d1.frequencies(q) for q in qs])
    f2 = np.array([d2.frequencies(q) for q in qs])
    assert np.abs(f1[0, :3]).max() < ACOUSTIC_TOL_THZ
    assert np.abs(f1 - f2).max() < DISPLACEMENT_TOL * f1.max()
    # frozen optical phonon at Gamma: sublattice A by +u x, B by -u x; per primitive cell
    # E(u) - E(0) = m omega^2 u^2 (mode (1, -1)/sqrt 2, amplitude u sqrt(2 m))
    sub_b = np.arange(len(pos)) % 8 >= 4
    us = np.array([0.0, 0.002, 0.004])
    cfgs = []
    for u in us:
        p = pos.copy()
        p[:, 0] += np.where(sub_b, -u, u)
        cfgs.append(dict(pos=p, cell=cell))
    e = np.array([r["pe"] for r in run.run("reference", cfgs, "frozen")]) / (len(pos) / 2)
    c2 = np.polyfit(us ** 2, e - e[0], 1)[0]                         # eV/A^2 per cell
    f_frozen = np.sqrt(c2 / 12.011) * ph.THZ_PER_UNIT
    assert f1[0, -1] == pytest.approx(f_frozen, rel=FROZEN_TOL)


def run_suite(args, timeout=300):
    proc = subprocess.run([sys.executable, str(VALIDATE), *args], capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, OMP_NUM_THREADS="1"))
    return proc


def test_self_check_gives_zero_error_and_passes_everywhere(lmp_env, request, tmp_path):
    """Cu (the cheapest reference, every section incl. the stacking fault) against itself."""
    out = tmp_path / "self"
    proc = run_suite(["--element", "Cu", "--potential", str(ROOT / "potentials" / "Cu.safetensors"),
                      "--out", str(out), "--quick", "--self-check", "--lmp", lmp_env])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    report = (out / "report.md").read_text()
    sections = ["eos", "elastic", "phonons", "vacancy", "surfaces", "stacking_fault",
                "isolated_atom", "rattle", "minimize", "nve", "liquid"]
    assert list(res["sections"]) == sections
    judged = 0
    for name in sections:
        sec = res["sections"][name]
        assert "error" not in sec, sec.get("error")
        assert f"## {name}" in report
        for row in sec["rows"]:
            assert not str(row["model"]).startswith("failed"), row
            assert row["model"] == row["reference"], row
            if row["error"] is not None and row["model"] is not None:
                assert row["error"] == 0, row
            if row["target"] is not None:
                judged += 1
                # a criterion row (convergence) may fail for the reference itself; then both fail
                assert row["pass"] is row.get("reference_pass", True), row
        for plot in sec["plots"]:
            assert (out / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert f"]({plot})" in report
    assert judged >= 30
    # the NVE time step is one at which the reference conserves energy within the target
    # (dynamics_sections.NVE_TIMESTEP), so the row judges the model, not the integrator
    assert res["sections"]["nve"]["rows"][0]["pass"] is True
    # every EOS fit found Mishin's lattice constants (doc/data.md: fcc 3.615, bcc 2.868 A)
    assert res["sections"]["eos"]["rows"][0]["reference"] == pytest.approx(3.615, abs=0.002)


def test_broken_potential_becomes_failed_rows_not_a_crash(lmp_env, request, tmp_path):
    plugin = request.config.getoption("--plugin")
    bad = tmp_path / "broken.safetensors"
    bad.write_bytes((ROOT / "potentials" / "Cu.safetensors").read_bytes()[:5000])
    out = tmp_path / "broken"
    args = ["--element", "Cu", "--potential", str(bad), "--out", str(out), "--quick", "--lmp",
            lmp_env, "--plugin", plugin, "--sections", "isolated_atom", "nve"]
    proc = run_suite(args)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    for name in ("isolated_atom", "nve"):
        rows = res["sections"][name]["rows"]
        assert rows and all(str(r["model"]).startswith("failed: ") and r["pass"] is False for r in rows
                            if r["target"] is not None), rows
        assert all(not str(r["reference"]).startswith("failed") for r in rows)
    assert "**FAIL**" in (out / "report.md").read_text()
    assert run_suite(args + ["--strict"]).returncode == 1


def test_shipped_potential_runs_through_the_plugin(lmp_env, request, tmp_path):
    plugin = request.config.getoption("--plugin")
    out = tmp_path / "c"
    proc = run_suite(["--element", "C", "--potential", str(ROOT / "potentials" / "C-diamond.safetensors"),
                      "--out", str(out), "--quick", "--lmp", lmp_env, "--plugin", plugin,
                      "--sections", "isolated_atom"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = json.loads((out / "results.json").read_text())["sections"]["isolated_atom"]["rows"]
    assert all(isinstance(r["model"], float) for r in rows), rows
    assert "== isolated_atom ==" in proc.stdout and "eos" in proc.stdout
