"""Model v2 in a real LAMMPS against fairchem-core 2.24.0 itself: a random-weight checkpoint of
UMA-S 1.2's structure (4 experts, composition routing, charge balancing, per-dataset heads),
converted by tools/convert_fairchem.py, gives fairchem's own energy, forces, stress and per-atom
energies (tests/fairchem/make_lammps_cases.py runs fairchem in its venv and stores them), on
periodic, triclinic and open structures, with task / charge / spin, in both ghost modes, on 1, 2
and 4 MPI ranks and through edgeframe/kk. Also models of eSEN's structure at lmax 3 and UMA-M 1.1's
at lmax 4, on fewer cases."""

import os
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from reference_case import KOKKOS_ARGS, METAL_NKTV2P, RUN_0_SCRIPT, read_dump, thermo_row, write_data

ROOT = Path(__file__).resolve().parents[2]
# fp64 against fairchem's fp64 predict: the same terms summed in other orders, measured ~1e-14
# relative; the bar of issue 24 is 1e-10.
REL_FP64 = 1e-10
ABS_FP64 = 1e-11     # eV, eV/A: components near zero compare absolutely
# fp32 against fairchem's fp32 predict: two float32 evaluations in different orders, each within
# ~1e-6 relative of the fp64 result on these structures (measured: see the fp32 test's message).
REL_FP32 = 2e-5
ABS_FP32 = 2e-5


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    python = os.environ.get("EDGEFRAME_FAIRCHEM_PYTHON", "")
    if not python or not Path(python).exists():
        pytest.fail("EDGEFRAME_FAIRCHEM_PYTHON must name the fairchem venv's python "
                    "(scripts/bootstrap.sh makes it; source $(scripts/bootstrap.sh --print-env))")
    out = tmp_path_factory.mktemp("fairchem")
    proc = subprocess.run([python, str(ROOT / "tests" / "fairchem" / "make_lammps_cases.py"), str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return out


def load(cases, name):
    return dict(np.load(cases / f"{name}.npz"))


class Structure:
    """What reference_case.write_data reads (an ase.Atoms-like view of a case)."""

    def __init__(self, rec):
        self.positions = rec["positions"]
        self.cell = rec["cell"]
        self.pbc = tuple(bool(p) for p in rec["pbc"])
        self.symbols = [str(s) for s in rec["symbols"]]

    def __len__(self):
        return len(self.symbols)


def run(lammps, tmp_path, cases, name, style="", nprocs=1, pre="", args=(), precision="fp64", model="uma"):
    rec = load(cases, name)
    atoms = Structure(rec)
    elements = sorted(set(atoms.symbols))
    q = write_data(tmp_path / "data.lmp", atoms, elements)
    system = f" task {rec['task']} charge {int(rec['charge'])}"
    if int(rec["spin"]) >= 0:
        system += f" spin {int(rec['spin'])}"
    boundary = "p p p" if all(atoms.pbc) else "f f f"
    script = RUN_0_SCRIPT.format(boundary=boundary, precision=precision + system + style,
                                 model=cases / f"{model}.safetensors", elements=" ".join(elements),
                                 nktv2p=METAL_NKTV2P, pre=pre, extra="")
    proc = lammps(script, nprocs=nprocs, args=args)
    assert proc.returncode == 0, proc.output[-3000:]
    return rec, q, thermo_row(proc.output), read_dump(tmp_path / "forces.dump", len(atoms)), proc.output


def check(rec, q, thermo, dump, prec="fp64", per_atom=True):
    rel, floor = (REL_FP64, ABS_FP64) if prec == "fp64" else (REL_FP32, ABS_FP32)

    def close(a, b, what):
        a, b = np.asarray(a, float), np.asarray(b, float)
        err = float(np.abs(a - b).max())
        bound = rel * max(float(np.abs(b).max()), 1.0) + floor
        assert np.isfinite(a).all() and err <= bound, f"{prec} {what}: max |diff| {err:.3e} > {bound:.3e}"

    close(thermo[1], rec[f"{prec}_energy"], "energy")
    close(dump[:, 1:4], rec[f"{prec}_forces"] @ q.T, "forces")
    if per_atom:
        close(dump[:, 4], rec[f"{prec}_energies"], "per-atom energies")
        # fairchem has no per-atom virial; ours (half of each edge's to either end) must sum to
        # the global one. compute stress/atom reports -(per-atom virial) * nktv2p.
        close(-dump[:, 5:11].sum(0) / METAL_NKTV2P, thermo[2:8], "per-atom virials sum to the virial")
    if f"{prec}_stress" in rec:
        volume = abs(np.linalg.det(rec["cell"]))
        virial = q @ (-rec[f"{prec}_stress"] * volume) @ q.T      # ASE stress = -virial / volume
        close(thermo[2:8], [virial[a, b] for a, b in [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]], "virial")


@pytest.mark.parametrize("name", ["diamond", "bcc_cu", "fcc_cu", "mgo", "triclinic", "molecule"])
def test_one_rank_equals_fairchem(lammps, tmp_path, cases, name):
    rec, q, thermo, dump, output = run(lammps, tmp_path, cases, name)
    check(rec, q, thermo, dump)
    assert "edgeframe model v2: task" in output


@pytest.mark.parametrize("name,style", [("diamond", " fold_images no"), ("mgo", " fold_images no ghost_mode shell"),
                                        ("molecule", " fold_images no")])
def test_ghost_modes_equal_fairchem(lammps, tmp_path, cases, name, style):
    rec, q, thermo, dump, _ = run(lammps, tmp_path, cases, name, style=style)
    check(rec, q, thermo, dump)


@pytest.mark.parametrize("name,nprocs,grid,style", [
    ("diamond", 2, "1 1 2", ""), ("diamond", 4, "2 2 1", ""), ("mgo", 4, "2 2 1", " ghost_mode shell"),
    ("triclinic", 2, "2 1 1", ""), ("molecule", 4, "4 1 1", "")])
def test_mpi_ranks_equal_fairchem(lammps, tmp_path, cases, name, nprocs, grid, style):
    # molecule 4 1 1: the open box is padded by 20 A, so two ranks own no atom and join the
    # charge-balance sums with zeros.
    rec, q, thermo, dump, _ = run(lammps, tmp_path, cases, name, style=style, nprocs=nprocs, pre=f"processors {grid}")
    check(rec, q, thermo, dump, per_atom=False)


@pytest.mark.parametrize("name", ["diamond", "bcc_cu", "molecule"])
def test_kokkos_style_equals_fairchem(lammps, tmp_path, cases, name):
    rec, q, thermo, dump, _ = run(lammps, tmp_path, cases, name, args=KOKKOS_ARGS)
    check(rec, q, thermo, dump)


def test_kokkos_style_on_two_ranks_equals_fairchem(lammps, tmp_path, cases):
    rec, q, thermo, dump, _ = run(lammps, tmp_path, cases, "mgo", nprocs=2, pre="processors 2 1 1",
                                  args=KOKKOS_ARGS + ("-pk", "kokkos", "newton", "on", "neigh", "half"))
    check(rec, q, thermo, dump, per_atom=False)


@pytest.mark.parametrize("name,nprocs,grid", [("diamond", 4, "2 2 1"), ("molecule", 4, "4 1 1")])
def test_kokkos_device_path_on_several_ranks_equals_one_rank(lammps, tmp_path, cases, name, nprocs, grid):
    # Issue 28 item 2: UMA (64 experts merged from the composition of all ranks, charge balancing
    # as one sum over ranks per layer, forward and backward) through edgeframe/kk's device path
    # with the per-layer exchange, against one rank (images folded) to fp64 rounding, and
    # against fairchem. molecule 4 1 1: two ranks own no atom and add zeros to the sums.
    _, _, thermo_1, dump_1, _ = run(lammps, tmp_path, cases, name, args=KOKKOS_ARGS)
    rec, q, thermo_n, dump_n, out_n = run(lammps, tmp_path, cases, name, nprocs=nprocs, pre=f"processors {grid}",
                                          args=KOKKOS_ARGS + ("-pk", "kokkos", "newton", "on", "neigh", "half"))
    assert f"per-layer exchange, {nprocs} rank(s)" in out_n, out_n[-2000:]
    for a, b in ((thermo_n[1:], thermo_1[1:]), (dump_n[:, 1:], dump_1[:, 1:])):
        a, b = np.asarray(a, float), np.asarray(b, float)
        assert np.abs(a - b).max() <= 1e-12 * max(np.abs(b).max(), 1.0), np.abs(a - b).max()
    check(rec, q, thermo_n, dump_n, per_atom=False)


# The engine at degrees 3 and 4, with one head for all datasets and no charge balancing: eSEN's
# structure at lmax 3 (as eSEN-30M) and UMA-M 1.1's at lmax 4 (make_lammps_cases.py OTHER_MODELS),
# through both styles and on two ranks.
@pytest.mark.parametrize("model,name,nprocs,args", [
    ("esen_l3", "diamond", 1, ()), ("esen_l3", "molecule", 1, ()),
    ("uma_m", "diamond", 1, ()), ("uma_m", "mgo", 1, ()), ("uma_m", "molecule", 1, ()),
    ("uma_m", "mgo", 2, ()), ("uma_m", "diamond", 1, KOKKOS_ARGS), ("esen_l3", "diamond", 1, KOKKOS_ARGS)])
def test_lmax_3_and_4_models_equal_fairchem(lammps, tmp_path, cases, model, name, nprocs, args):
    rec, q, thermo, dump, _ = run(lammps, tmp_path, cases, f"{model}-{name}", nprocs=nprocs, args=args,
                                  pre="processors 2 1 1" if nprocs == 2 else "", model=model)
    check(rec, q, thermo, dump, per_atom=nprocs == 1)


@pytest.mark.parametrize("name", ["diamond", "mgo"])
def test_fp32_within_float_rounding_of_fairchem_fp32(lammps, tmp_path, cases, name):
    rec, q, thermo, dump, _ = run(lammps, tmp_path, cases, name, precision="fp32")
    check(rec, q, thermo, dump, prec="fp32")


def test_unknown_task_lists_the_tasks(lammps, tmp_path, cases):
    rec = load(cases, "diamond")
    write_data(tmp_path / "data.lmp", Structure(rec), ["C"])
    script = RUN_0_SCRIPT.format(boundary="p p p", precision="fp64 task omc", model=cases / "uma.safetensors",
                                 elements="C", nktv2p=METAL_NKTV2P, pre="", extra="")
    proc = lammps(script)
    assert proc.returncode != 0
    assert "task 'omc' is not one of the tasks of potential" in proc.output and "oc20, omat, omol" in proc.output


def test_charge_outside_the_table_is_an_error(lammps, tmp_path, cases):
    rec = load(cases, "diamond")
    write_data(tmp_path / "data.lmp", Structure(rec), ["C"])
    script = RUN_0_SCRIPT.format(boundary="p p p", precision="fp64 task omat charge 150",
                                 model=cases / "uma.safetensors", elements="C", nktv2p=METAL_NKTV2P, pre="", extra="")
    proc = lammps(script)
    assert proc.returncode != 0
    assert "charge 150 is outside the model's table (-100..100)" in proc.output


def test_composition_change_merges_the_experts_again(lammps, tmp_path, cases):
    """set type changes the composition between two runs: the log says the experts were merged
    again, and the second energy is fairchem's for the new composition (diamond with atoms 1-4
    made Cu), not the first one's."""
    rec, new = load(cases, "diamond"), load(cases, "diamond_cu4")
    write_data(tmp_path / "data.lmp", Structure(rec), ["C", "Cu"])
    script = RUN_0_SCRIPT.format(boundary="p p p", precision="fp64 task omat", model=cases / "uma.safetensors",
                                 elements="C Cu", nktv2p=METAL_NKTV2P, pre="",
                                 extra="run 0 post no\nset atom 1*4 type 2")
    proc = lammps(script)
    assert proc.returncode == 0, proc.output[-3000:]
    assert "edgeframe: the composition changed; edgeframe model v2: task omat" in proc.output
    lines = proc.output.splitlines()
    rows = [float(lines[k + 1].split()[1]) for k, line in enumerate(lines) if line.split()[:2] == ["Step", "PotEng"]]
    assert len(rows) == 2
    assert abs(rows[0] - float(rec["fp64_energy"])) <= REL_FP64 * abs(float(rec["fp64_energy"])) + ABS_FP64
    assert abs(rows[1] - float(new["fp64_energy"])) <= REL_FP64 * abs(float(new["fp64_energy"])) + ABS_FP64
    assert abs(rows[1] - rows[0]) > 1e-3


def perfect_diamond(path, reps=(1, 1, 2), a=3.567):
    """A perfect diamond lattice (no rattle) as a LAMMPS data file; 8 atoms per cubic cell."""
    fcc = np.array([[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]])
    basis = np.vstack([fcc, fcc + 0.25])
    cells = np.array([[i, j, k] for i in range(reps[0]) for j in range(reps[1]) for k in range(reps[2])])
    pos = ((cells[:, None, :] + basis[None]) * a).reshape(-1, 3)
    lines = ["edgeframe perfect diamond", "", f"{len(pos)} atoms", "1 atom types", ""]
    lines += [f"0 {r * a:.12f} {x}lo {x}hi" for r, x in zip(reps, "xyz")]
    lines += ["", "Masses", "", "1 12.011", "", "Atoms # atomic", ""]
    lines += [f"{k + 1} 1 {p[0]:.12f} {p[1]:.12f} {p[2]:.12f}" for k, p in enumerate(pos)]
    path.write_text("\n".join(lines) + "\n")
    return len(pos)


def test_energy_is_quadratic_in_small_displacements_of_a_perfect_lattice(lammps, tmp_path, cases):
    """Model v2 is smooth at a perfect crystal (v1's per-degree norm was not): the forces vanish
    there (cubic symmetry) and E(sigma u) - E(0) = a sigma^2 + O(sigma^3) for one random pattern u
    scaled by sigma = 0.001..0.05 A: no offset, no linear term, no kink. The sign of a is the
    random-weight model's (this one's perfect lattice is a saddle); that a trained potential's
    energy rises is checked with the potentials of issue 25."""
    perfect_diamond(tmp_path / "perfect.data")
    sigmas = [0.001, 0.002, 0.005, 0.01, 0.02, 0.05]
    script = f"""
    variable s index 0 {' '.join(map(str, sigmas))}
    label loop
    clear
    units metal
    atom_style atomic
    atom_modify map array
    read_data perfect.data
    pair_style edgeframe precision fp64 task omat
    pair_coeff * * {cases / 'uma.safetensors'} C
    displace_atoms all random $s $s $s 4711 units box
    compute fmax all reduce max fx fy fz
    thermo_style custom step pe c_fmax[1] c_fmax[2] c_fmax[3]
    thermo_modify format float %.17g
    run 0 post no
    print "SIGMA $s ENERGY $(pe:%.17g) FMAX $(c_fmax[1]:%.17g)"
    next s
    jump SELF loop
    """
    proc = lammps(script)
    assert proc.returncode == 0, proc.output[-3000:]
    rows = [line.split() for line in proc.output.splitlines() if line.startswith("SIGMA ")]
    assert len(rows) == len(sigmas) + 1
    e0 = float(rows[0][3])
    assert abs(float(rows[0][5])) < 1e-10, "forces at the perfect lattice must vanish"
    curv = [(float(r[3]) - e0) / s ** 2 for r, s in zip(rows[1:], sigmas)]
    # a sigma^2 with a relative cubic correction: within 0.5 % up to 0.01 A, 5 % at 0.05 A
    # (measured 0.3 % and 2 % with this model).
    assert abs(curv[0]) > 1e-3
    for c, s in zip(curv, sigmas):
        assert abs(c / curv[0] - 1) < (5e-3 if s <= 0.01 else 5e-2), (s, curv)


def test_nve_from_a_perfect_lattice_conserves_energy(lammps, tmp_path, cases):
    """NVE from a perfect 16-atom diamond lattice at 300 K, 400 steps of 0.5 fs: the total
    energy stays within 1e-5 eV/atom (issue 24). The random-weight model is not a physical one
    (its perfect lattice is a saddle and it pulls some atoms together): min_distance 0.1 lets the
    run go on where the default 0.3 A guard would stop it; the model is smooth there too."""
    n_atoms = perfect_diamond(tmp_path / "perfect.data")
    script = f"""
    units metal
    atom_style atomic
    atom_modify map array
    read_data perfect.data
    pair_style edgeframe precision fp64 task omat min_distance 0.1
    pair_coeff * * {cases / 'uma.safetensors'} C
    velocity all create 300.0 4928459 mom yes rot yes dist gaussian
    timestep 0.0005
    fix nve all nve
    thermo_style custom step temp pe etotal
    thermo_modify format float %.17g
    thermo 20
    run 400
    """
    proc = lammps(script)
    assert proc.returncode == 0, proc.output[-3000:]
    lines = proc.output.splitlines()
    k = next(k for k, line in enumerate(lines) if line.split()[:2] == ["Step", "Temp"])
    rows = []
    for line in lines[k + 1:]:
        parts = line.split()
        if len(parts) != 4 or not parts[0].isdigit():
            break
        rows.append([float(v) for v in parts])
    assert rows[-1][0] == 400
    etot = np.array([r[3] for r in rows])
    drift = np.abs(etot - etot[0]).max() / n_atoms
    assert drift < 1e-5, f"total energy moved by {drift:.2e} eV/atom over 400 steps"
    assert max(r[1] for r in rows) > 100.0   # the atoms really moved


@pytest.mark.parametrize("name,nprocs,style", [("diamond", 1, ""), ("mgo", 2, " ghost_mode exchange"),
                                                ("molecule", 1, "")])
def test_recompute_equals_fairchem(lammps, tmp_path, cases, name, nprocs, style):
    # activations recompute: each layer's edge part keeps only its inputs and runs again in the
    # backward pass; the numbers are fairchem's all the same, and the log counts the reruns (the
    # model has 2 layers, run 0 makes one force call).
    rec, q, thermo, dump, output = run(lammps, tmp_path, cases, name, style=" activations recompute" + style,
                                       nprocs=nprocs, pre="processors 2 1 1" if nprocs == 2 else "")
    check(rec, q, thermo, dump, per_atom=nprocs == 1)
    assert "edgeframe activations recompute: 2 edge parts (layers x edge chunks) run again" in output


@pytest.mark.parametrize("name,nprocs,args,headroom", [("diamond", 1, (), ""), ("mgo", 2, (), ""),
                                                        ("bcc_cu", 1, KOKKOS_ARGS, " edge_headroom 0.02"),
                                                        ("bcc_cu", 1, KOKKOS_ARGS,
                                                         " edge_headroom 0.02 activations stream edge_chunk 100"),
                                                        ("molecule", 1, KOKKOS_ARGS, "")])
def test_graph_per_rebuild_equals_fairchem(lammps, tmp_path, cases, name, nprocs, args, headroom):
    # graph per_rebuild: the candidates within r_c + skin (neighbor 1.5 A here: for these r_c
    # about twice the edges within r_c) are kept and each step evaluates those within r_c, on
    # one rank with the automatic edge_headroom (exact on CPU builds) and 0.02 (spare edges, which
    # must add exactly nothing to fairchem's numbers: the envelope multiplies every message and
    # the edge-degree embedding; also when the spare edges are streamed in chunks with the rest).
    rec, q, thermo, dump, output = run(lammps, tmp_path, cases, name, style=" graph per_rebuild" + headroom,
                                       nprocs=nprocs,
                                       pre="neighbor 1.5 bin\n" + ("processors 2 1 1" if nprocs == 2 else ""),
                                       args=args)
    check(rec, q, thermo, dump, per_atom=nprocs == 1)
    assert "edgeframe: graph per_rebuild: candidate pairs within r_cut + skin" in output
    if "stream" in headroom:
        m = re.search(r"edgeframe activations stream: (\d+) edge parts", output)
        assert m and int(m.group(1)) > 2, output[-2000:]   # 2 layers, several chunks each


@pytest.mark.parametrize("mode,name,nprocs,style,args", [("recompute", "diamond", 1, "", ()),
                                                         ("recompute", "mgo", 2, " ghost_mode exchange", ()),
                                                         ("stream", "diamond", 1, "", ()),
                                                         ("stream", "mgo", 2, " ghost_mode exchange", ()),
                                                         ("stream", "bcc_cu", 1, "", KOKKOS_ARGS)])
def test_recompute_in_edge_chunks_equals_fairchem(lammps, tmp_path, cases, mode, name, nprocs, style, args):
    # activations recompute with edge_chunk: each layer's edge part runs (forward and again in the
    # backward pass) over receiver ranges of at most 20 edges, the messages summed over them;
    # stream: the same, and the edge geometry and the edge-degree embedding are made per chunk
    # too, the node parts run again. fairchem's numbers all the same (also with the exchange on
    # two ranks and through edgeframe/kk), and the log counts layers x chunks reruns.
    rec, q, thermo, dump, output = run(lammps, tmp_path, cases, name,
                                       style=f" activations {mode} edge_chunk 20" + style, nprocs=nprocs,
                                       pre="processors 2 1 1" if nprocs == 2 else "", args=args)
    check(rec, q, thermo, dump, per_atom=nprocs == 1)
    m = re.search(rf"edgeframe activations {mode}: (\d+) edge parts", output)
    assert m, output[-2000:]
    assert int(m.group(1)) > 2 and int(m.group(1)) % 2 == 0   # 2 layers, several chunks each


def test_memory_budget_streams_and_equals_fairchem(lammps, tmp_path, cases):
    # activations auto under a budget smaller than any plan: the plan that needs least, every
    # layer streamed (model v2), the log says the plan and that it is over the budget even so, and
    # the numbers are fairchem's.
    rec, q, thermo, dump, output = run(lammps, tmp_path, cases, "diamond", style=" memory_budget 1e-9")
    check(rec, q, thermo, dump)
    assert "edgeframe activations auto on rank 0: stream all layers" in output, output[-2000:]
    assert "over the budget even so" in output
    assert "edgeframe activations auto: 2 edge parts (layers x edge chunks) run again" in output


def test_idle_ranks_in_shell_mode_join_the_charge_sums(lammps, tmp_path, cases):
    # The ghost shell has no exchange, but model v2's charge balance still sums over all ranks:
    # the two ranks that own no atom of the open box must make the same sums (with zeros).
    rec, q, thermo, dump, _ = run(lammps, tmp_path, cases, "molecule", style=" ghost_mode shell fold_images no",
                                  nprocs=4, pre="processors 4 1 1")
    check(rec, q, thermo, dump, per_atom=False)


@pytest.mark.parametrize("name", ["diamond", "mgo", "triclinic", "molecule"])
def test_python_calculator_equals_fairchem(request, cases, name):
    # edgeframe.Calculator (doc/python.md) on a converted UMA model with the case's task, charge
    # and spin: fairchem's own fp64 energy, forces, per-atom energies and stress.
    folder = request.config.getoption("--python-dir")
    if not folder:
        pytest.skip("the Python module was not built (configure with -DEDGEFRAME_BUILD_PYTHON=ON)")
    import sys
    sys.path.insert(0, folder)
    import ase
    import edgeframe
    rec = load(cases, name)
    atoms = ase.Atoms(symbols=[str(s) for s in rec["symbols"]], positions=rec["positions"], cell=rec["cell"],
                      pbc=[bool(p) for p in rec["pbc"]])
    spin = int(rec["spin"]) if int(rec["spin"]) >= 0 else None
    atoms.calc = edgeframe.Calculator(cases / "uma.safetensors", precision="fp64", task=str(rec["task"]),
                                      charge=int(rec["charge"]), spin=spin)

    def close(a, b, what):
        a, b = np.asarray(a, float), np.asarray(b, float)
        err = float(np.abs(a - b).max())
        bound = REL_FP64 * max(float(np.abs(b).max()), 1.0) + ABS_FP64
        assert np.isfinite(a).all() and err <= bound, f"{what}: max |diff| {err:.3e} > {bound:.3e}"

    close(atoms.get_potential_energy(), rec["fp64_energy"], "energy")
    close(atoms.get_forces(), rec["fp64_forces"], "forces")
    close(atoms.get_potential_energies(), rec["fp64_energies"], "per-atom energies")
    if "fp64_stress" in rec and all(atoms.pbc):
        close(atoms.get_stress(voigt=False), rec["fp64_stress"], "stress")
