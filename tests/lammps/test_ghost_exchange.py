"""Per-layer ghost exchange (ghost_mode exchange, issue #8) against the ghost shell
(ghost_mode shell) and the PyTorch reference: energy, forces, global and per-atom virial and
per-atom energy on 1/2/3/4/8 ranks, subdomains far thinner than the receptive field, ranks that
own no atom, NULL types under hybrid, comm_style tiled, and MD with atoms migrating between ranks."""
import re

import numpy as np
import pytest

from reference_case import ON_GPU, METAL_NKTV2P, RUN_0_SCRIPT, calc, read_dump, write_data
from test_lammps_behaviour import setup, thermo_table
from test_vs_reference import (KOKKOS_ARGS, check_against_reference, close, expected,  # noqa: F401
                               make_small_model, run_case, small_model, structure)

# fp32 engine vs the float64 reference, relative to the largest component: the engine tests
# measured <= 2.9e-5 on forces (doc/engine.md, Precision); the same bound as there.
REL_TOL_FP32 = 6e-5
# edgeframe/kk's host-data path needs newton on (LAMMPS-KOKKOS' GPU default is off).
PK_HOST_DATA = ("-pk", "kokkos", "newton", "on", "neigh", "half")


@pytest.fixture(autouse=True)
def mpi_transport_unless_asked(lammps):
    """The direct swaps' transport defaults to CUDA IPC on CUDA builds; the tests of the MPI
    swaps (their split line, bus bytes) must test MPI there too. The CUDA IPC tests ask for it."""
    lammps.style_keywords["exchange_transport"] = "mpi"


@pytest.fixture(scope="module")
def odd_width_model(tmp_path_factory):
    """small_model's shape with 7 channels: rows of 9 x 7 = 63 values, an odd count, so fp32 rows
    end half-way through their last double slot (the padding of the exchange's stage)."""
    return make_small_model(tmp_path_factory, channels=7, seed=11)


def check_fp32_against_reference(model, atoms, q, thermo, dump):
    """Energy and forces of an fp32 run against the float64 reference (REL_TOL_FP32)."""
    ref, forces, _, _ = expected(model, atoms, q)
    assert close(thermo[1], ref["energy"], rel=REL_TOL_FP32)
    assert close(dump[:, 1:4], forces, rel=REL_TOL_FP32)


def graph_line(output):
    """(LAMMPS ghosts mean, nodes mean, ghost nodes mean, edges mean) of the end-of-run line."""
    m = re.search(r"edgeframe graph per rank.*?LAMMPS ghosts ([\d.]+) / \d+ \| nodes ([\d.]+) / \d+ \| "
                  r"ghost nodes ([\d.]+) / \d+ \| edges ([\d.]+) / \d+", output)
    assert m, output[-2000:]
    return [float(v) for v in m.groups()]


@pytest.mark.parametrize("name,nprocs,grid", [("diamond64", 1, "1 1 1"), ("diamond64", 2, "2 1 1"),
                                              ("diamond64", 4, "2 2 1"), ("diamond64", 4, "4 1 1"),
                                              ("diamond64", 8, "2 2 2"), ("diamond64", 8, "8 1 1"),
                                              ("bcc_cu54", 4, "1 2 2"), ("cluster", 4, "4 1 1"),
                                              ("triclinic_ccu16", 3, "3 1 1")])
def test_exchange_matches_reference_and_shell(lammps, tmp_path, small_model, name, nprocs, grid):
    # diamond 4 1 1 / 8 1 1: subdomains 1.8 A / 0.9 A thick, thinner than one cutoff (2.8 A),
    # so ghosts are relayed through several swaps (multi-hop); 1 1 1 with fold_images no: every
    # ghost is a periodic image on the same rank, exchanged by swaps to itself; cluster 4 1 1:
    # the outer two ranks own no atom and take part in every exchange with nothing to send.
    model, path = small_model
    atoms, boundary = structure(name)
    out = {}
    for mode in ("exchange", "shell"):
        q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=nprocs,
                                           pre=f"processors {grid}",
                                           style_args=f" fold_images no ghost_mode {mode}")
        assert ("ghost mode exchange" in output) == (mode == "exchange")
        assert ("ghost cutoff set to" in output) == (mode == "shell")
        out[mode] = thermo, dump, graph_line(output)
    expect = expected(model, atoms, q)
    for mode, (thermo, dump, _) in out.items():
        check_against_reference(expect, thermo, dump, what=mode)
    # The two modes against each other: fp64 rounding (same terms, other summation orders).
    (te, de, ge), (ts, ds, gs) = out["exchange"], out["shell"]
    assert close(te[1:], ts[1:], rel=1e-12, floor=1e-12)
    assert close(de[:, 1:], ds[:, 1:], rel=1e-12, floor=1e-12)
    # Less work per rank: fewer LAMMPS ghosts, nodes and edges (periodic cases; the cluster's
    # padded box keeps ghosts few either way).
    if name != "cluster":
        assert ge[0] < gs[0] and ge[1] < gs[1] and ge[3] < gs[3], (ge, gs)


@pytest.mark.parametrize("path_kind,grid,odd", [("direct", "4 1 1", False), ("staged", "2 2 1", False),
                                               ("staged-lammps-threaded", "2 2 1", False), ("direct", "4 1 1", True),
                                               ("staged", "2 2 1", True), ("staged-lammps", "2 2 1", True)])
def test_exchange_fp32_matches_reference(lammps, tmp_path, small_model, odd_width_model, path_kind, grid,
                                         odd):
    # Float features travel as their bytes, two per slot of LAMMPS' double buffers, and float
    # gradients are summed onto their owners in float: 4 ranks, so most rows cross a rank.
    # "direct" here is the host path (rows copied straight into LAMMPS' buffers); staged: the CUDA
    # builds' path (float kernels over a stage of doubles' bytes; its own MPI swaps by default,
    # -lammps: LAMMPS' swaps from the pinned stage); threaded: every host row loop of the
    # exchange on two OpenMP threads (by default only loops moving 4 MiB or more are, which no
    # test box reaches).
    if path_kind.startswith("staged"):
        lammps.style_keywords["exchange_stage"] = "yes"
    if "-lammps" in path_kind:
        lammps.style_keywords["exchange_swaps"] = "lammps"
    if path_kind.endswith("threaded"):
        lammps.style_keywords["exchange_threads"] = "2"
        lammps.style_keywords["exchange_parallel_bytes"] = "0"
    model, path = odd_width_model if odd else small_model
    atoms, boundary = structure("diamond64")
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=4, pre=f"processors {grid}",
                                       style_args=" ghost_mode exchange", precision="fp32")
    # CUDA builds always stage the plain style's exchange (exchange_stage yes forces it on CPUs).
    assert ("staged through pinned host memory" in output) == (path_kind.startswith("staged") or ON_GPU)
    check_fp32_against_reference(model, atoms, q, thermo, dump)


def md_40_steps(lammps, tmp_path, model_path, atoms, grid, style_args, every=1, args=()):
    """40 steps of NVE at 1500 K on 4 ranks with neighbour-list rebuilds every `every` steps
    (atoms move between subdomains, ghosts and swap lists change): the log and its thermo table."""
    script = setup(tmp_path, atoms, model_path, pre=f"processors {grid}").replace(
        "precision fp64", f"precision fp64{style_args}") + f"""
neighbor 0.3 bin
neigh_modify every {every} delay 0 check no
velocity all create 1500 4928459 mom yes rot yes dist gaussian
timestep 0.0005
fix 1 all nve
thermo 10
thermo_style custom step temp pe etotal press
thermo_modify format float %.15g
run 40
"""
    run = lammps(script, nprocs=4, args=args)
    assert run.returncode == 0, run.output[-2000:]
    return run.output, np.array(thermo_table(run.output))


def test_exchange_md_with_migration_equals_shell(lammps, tmp_path, small_model):
    # Both modes must give the same trajectory.
    _, path = small_model
    atoms, _ = structure("diamond64")
    rows = {mode: md_40_steps(lammps, tmp_path, path, atoms, "4 1 1", f" ghost_mode {mode}")[1]
            for mode in ("exchange", "shell")}
    assert rows["exchange"].shape == rows["shell"].shape == (5, 5)
    # Chaotic dynamics amplify rounding, but over 40 steps it stays far below 1e-9.
    assert close(rows["exchange"], rows["shell"], rel=1e-9)


@pytest.mark.parametrize("staged", [False, True])
def test_exchange_with_null_types_on_several_ranks(lammps, tmp_path, small_model, staged):
    # Cu NULL for edgeframe (lj/cut with epsilon 0 takes them): ranks whose owned atoms are all
    # Cu have no nodes and still take part in the exchanges, and Cu atoms relay gradients in the
    # reverse exchange without adding any. Energy and forces against the reference on the carbon
    # atoms alone (forces are what the reverse exchange reaches). Staged (the CUDA builds' path,
    # host loops threaded): owned atoms that are no node sit between the nodes in the
    # device-side reordering.
    if staged:
        lammps.style_keywords["exchange_stage"] = "yes"
        lammps.style_keywords["exchange_threads"] = "2"
        lammps.style_keywords["exchange_parallel_bytes"] = "0"
    model, path = small_model
    atoms, _ = structure("triclinic_ccu16")
    q = write_data(tmp_path / "data.lmp", atoms, ["C", "Cu"])
    base = setup(tmp_path, atoms, path, pre="processors 3 1 1")
    script = base.replace("pair_style edgeframe precision fp64",
                          "pair_style hybrid edgeframe precision fp64 ghost_mode exchange lj/cut 3.0").replace(
        f"pair_coeff * * {path} C Cu",
        f"pair_coeff * * edgeframe {path} C NULL\npair_coeff 1 2 lj/cut 0.0 1.5\npair_coeff 2 2 lj/cut 0.0 1.5")
    script += ("compute ml all pair edgeframe\nthermo_style custom step c_ml\nthermo_modify format float %.15g\n"
               "dump d all custom 1 forces.dump id fx fy fz\ndump_modify d format float %.17g sort id\n"
               "run 0 post no\n")
    run = lammps(script, nprocs=3)
    assert run.returncode == 0, run.output[-2000:]
    # CUDA builds always stage the plain style's exchange (exchange_stage yes forces it on CPUs).
    assert ("staged through pinned host memory" in run.output) == (staged or ON_GPU)
    assert staged == ("exchange host copies on 2 OpenMP threads" in run.output)
    keep = [k for k, s in enumerate(atoms.symbols) if s == "C"]
    carbon = atoms.copy()
    carbon.positions = atoms.positions[keep]
    carbon.symbols = [atoms.symbols[k] for k in keep]
    ref = calc.evaluate(model, carbon)
    assert close(thermo_table(run.output)[0][1], ref["energy"])
    forces = read_dump(tmp_path / "forces.dump", len(atoms))[:, 1:4]
    expect = np.zeros((len(atoms), 3))
    expect[keep] = ref["forces"] @ q.T
    assert close(forces, expect)


@pytest.mark.parametrize("mode", ["exchange", "exchange-staged", "exchange-staged-lammps", "shell"])
def test_timing_detail_prints_the_split(lammps, tmp_path, small_model, mode):
    # exchange-staged: the CUDA builds' path, its own MPI swaps (the default there); -lammps:
    # LAMMPS' swaps from the pinned stage.
    if mode.startswith("exchange-staged"):
        lammps.style_keywords["exchange_stage"] = "yes"
    if mode.endswith("-lammps"):
        lammps.style_keywords["exchange_swaps"] = "lammps"
    staged = mode.startswith("exchange-staged") or (ON_GPU and mode == "exchange")
    direct = staged and not mode.endswith("-lammps")
    _, path = small_model
    atoms, boundary = structure("diamond64")
    # Two runs: every timing line, the exchange split included, is per run, so the second one
    # (run 0: one force call, 2 (T - 1) exchanges) must not carry the first run's sums.
    _, _, _, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=2, pre="processors 2 1 1",
                               style_args=f" ghost_mode {mode.split('-')[0]} timing detail",
                               extra="run 3 post no\nrun 0 post no")
    line = [ln for ln in output.splitlines() if ln.startswith("edgeframe timing detail")][-1]
    for part in ("graph build", "band + radial", "edge-frame kernels", "GEMMs + dense torch ops",
                 "feature exchange", "results to LAMMPS"):
        assert part in line, line
    exchange_time = float(re.search(r"feature exchange ([\d.e+-]+) /", line).group(1))
    assert (exchange_time > 0) == (mode != "shell"), line
    # The exchange's own split: reordering and LAMMPS' communication always, bus copies (and
    # their bytes) only on the staged path; the parts add up to at most the exchange's time.
    split = [ln for ln in output.splitlines() if ln.startswith("edgeframe exchange split")][-1:]
    assert bool(split) == (mode != "shell"), output[-1500:]
    if split:
        layers = 3    # small_model
        assert f"; {2 * (layers - 1)} exchanges on rank 0)" in split[0], split[0]
        num = r"([\d.e+-]+)"
        comm_part = r"direct MPI swaps \(MPI, waiting\)" if direct else r"LAMMPS communication \(pack, MPI, unpack\)"
        m = re.search(rf"reordering rows {num} / {num} \| device <-> pinned host copies {num} / {num} \({num} GB per "
                      rf"rank\) \| {comm_part} {num} / {num}, of which host pack \+ unpack {num} / {num}.* \| traces of "
                      rf"the swaps \(in graph build\) {num} / {num} \((\d+) traced neighbour-list builds\)", split[0])
        assert m, split[0]
        reorder, bus, gb, comm = float(m.group(1)), float(m.group(3)), float(m.group(5)), float(m.group(6))
        host_pack = float(m.group(8))
        assert reorder > 0 and comm > 0, split[0]
        # LAMMPS' swaps pack on the host (the staged path from the pinned stage): a part of comm.
        # Direct MPI has no host pack at all.
        assert (0 < host_pack <= comm) if not direct else host_pack == 0, split[0]
        assert (bus > 0 and gb > 0) == staged, split[0]
        assert reorder + bus + comm <= exchange_time * 1.05, (split[0], line)
        assert int(m.group(12)) == 1, split[0]    # run 0: one neighbour-list build, one trace


def test_timing_detail_splits_off_the_first_force_call(lammps, tmp_path, small_model):
    # The run's first force call carries its setup (graph rebuild, node map, swap traces); the
    # end-of-run sums mix it with the loop's calls, so timing detail also prints the loop's
    # split per call and the first call's apart. Part by part, first + (calls - 1) x per call
    # must give the run's sum (4 significant digits printed).
    _, path = small_model
    atoms, boundary = structure("diamond64")
    _, _, _, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=2, pre="processors 2 1 1",
                               style_args=" ghost_mode exchange timing detail", extra="run 4 post no")
    lines = output.splitlines()
    calls = int(re.search(r"edgeframe timing over (\d+) force calls", output).group(1))    # the run 4's
    assert calls == 5, output[-2000:]
    total = next(ln for ln in lines if ln.startswith("edgeframe timing detail ("))
    after = next(ln for ln in lines if ln.startswith("edgeframe timing detail per force call after the first"))
    first = next(ln for ln in lines if ln.startswith("edgeframe timing detail of the first force call"))
    assert "(4 calls;" in after, after
    num = r"([\d.e+-]+)"
    for part in (r"graph build \+ upload", r"band \+ radial \+ edge vectors \+ force sums", "edge-frame kernels",
                 r"GEMMs \+ dense torch ops", "feature exchange", "results to LAMMPS"):
        t = float(re.search(rf"{part} {num} /", total).group(1)) * 1e3    # seconds there
        f = float(re.search(rf"{part} {num} /", first).group(1))
        a = float(re.search(rf"{part} {num} /", after).group(1))
        assert f + (calls - 1) * a == pytest.approx(t, rel=2e-3, abs=2e-3), (part, total, first, after)
    # The swap traces (one neighbour-list build in this run: the setup's) are inside the first
    # call's graph build (a first-call record left at zero fails here).
    split = next(ln for ln in lines if ln.startswith("edgeframe exchange split"))    # run 4's
    traces = float(re.search(rf"traces of the swaps \(in graph build\) {num} /", split).group(1)) * 1e3
    first_graph = float(re.search(rf"graph build \+ upload {num} /", first).group(1))
    assert 0 < traces <= first_graph * 1.001, (traces, first)
    # the exchange's MPI (or LAMMPS communication) part is inside the exchange, in both lines
    for line in (first, after):
        m = re.search(rf"feature exchange {num} / {num} \(MPI and waiting, or LAMMPS communication: {num} / {num}\)", line)
        assert m and 0 < float(m.group(3)) <= float(m.group(1)) * 1.001, line


def split_line(output):
    """The last `edgeframe exchange split` line of a log (timing detail)."""
    return [ln for ln in output.splitlines() if ln.startswith("edgeframe exchange split")][-1]


def exchange_rows_per_exchange(output):
    """Rows the host pack / unpack callbacks moved, per rank and exchange (timing detail's split)."""
    split = split_line(output)
    m = re.search(r"\(([\d.]+) rows per rank and exchange; swaps to the same rank (skipped|by LAMMPS)\)", split)
    assert m, split
    return float(m.group(1)), m.group(2)


@pytest.mark.parametrize("nprocs,grid,staged", [(1, "1 1 1", False), (2, "2 1 1", False), (2, "2 1 1", True),
                                                (4, "1 2 2", False), (4, "1 2 2", True)])
def test_swaps_to_the_same_rank_stay_off_the_host(lammps, tmp_path, small_model, nprocs, grid, staged):
    # Ghosts that are periodic images made on this rank take their root's row instead of being
    # packed and unpacked on the host: on one rank (every swap to itself) the host moves no row
    # at all; on 2 and 4 ranks only the MPI swaps' rows move (1 2 2: the x swaps are self swaps,
    # so the MPI swaps along y and z send atoms together with their images, which share a root).
    # exchange_self_swaps lammps (LAMMPS does every swap) gives the same forces to
    # rounding and moves more rows.
    model, path = small_model
    atoms, boundary = structure("diamond64")
    if staged or ON_GPU:
        lammps.style_keywords["exchange_stage"] = "yes"
    lammps.style_keywords["exchange_swaps"] = "lammps"    # the host rows counted are LAMMPS' swaps'
    runs = {}
    for self_swaps in ("skip", "lammps"):
        lammps.style_keywords["exchange_self_swaps"] = self_swaps
        q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=nprocs,
                                           pre=f"processors {grid}",
                                           style_args=" fold_images no ghost_mode exchange timing detail")
        check_against_reference(expected(model, atoms, q), thermo, dump, per_atom=False)
        rows, how = exchange_rows_per_exchange(output)
        assert how == ("skipped" if self_swaps == "skip" else "by LAMMPS"), output[-1500:]
        runs[self_swaps] = (rows, thermo, dump)
    (rows_skip, thermo_skip, dump_skip), (rows_lammps, thermo_lammps, dump_lammps) = runs["skip"], runs["lammps"]
    assert rows_lammps > 0
    if nprocs == 1:
        assert rows_skip == 0
    else:
        assert 0 < rows_skip < rows_lammps
    assert close(thermo_skip[1], thermo_lammps[1], rel=1e-12)
    assert close(dump_skip[:, 1:4], dump_lammps[:, 1:4], rel=1e-10)


def test_bad_self_swaps_setting_is_an_error(lammps, tmp_path, small_model):
    _, path = small_model
    atoms, boundary = structure("diamond64")
    lammps.style_keywords["exchange_self_swaps"] = "device"
    write_data(tmp_path / "data.lmp", atoms, ["C", "Cu"])
    script = RUN_0_SCRIPT.format(boundary=boundary, precision="fp64 ghost_mode exchange fold_images no", model=path,
                                 elements="C Cu", nktv2p=METAL_NKTV2P, pre="", extra="")
    run = lammps(script)
    assert run.returncode != 0 and "unknown exchange_self_swaps 'device' (valid: skip, lammps)" in run.output, \
        run.output[-2000:]


def test_timing_detail_and_graph_line_on_the_kk_device_path(lammps, tmp_path, small_model):
    _, path = small_model
    atoms, boundary = structure("diamond64")
    _, _, _, output = run_case(lammps, tmp_path, path, atoms, boundary, args=KOKKOS_ARGS, style_args=" timing detail")
    assert "edgeframe/kk: device-resident path" in output
    line = next(ln for ln in output.splitlines() if ln.startswith("edgeframe timing detail"))
    assert float(re.search(r"edge-frame kernels ([\d.e+-]+) /", line).group(1)) > 0, line
    _, nodes, ghost_nodes, edges = graph_line(output)
    assert nodes == len(atoms) and ghost_nodes == 0 and edges > 0, output[-1500:]


def test_bad_ghost_mode_timing_activations_and_graph_settings_are_errors(lammps, tmp_path, small_model):
    _, path = small_model
    atoms, boundary = structure("diamond64")
    for args, text in ((" ghost_mode fat", "unknown ghost_mode 'fat' (valid: exchange, shell)"),
                       (" timing verbose", "unknown timing 'verbose' (valid: basic, detail)"),
                       (" activations drop", "unknown activations 'drop' (valid: auto, keep, recompute, stream)"),
                       (" edge_chunk -5", "edge_chunk must be >= 0 (got -5)"),
                       (" edge_chunk 1000", "edge_chunk 1000 needs 'activations recompute' or 'activations stream'"),
                       (" activations stream", "activations stream is for model v2 potentials"),
                       (" memory_budget 0", "memory_budget must be > 0 GB (got 0)"),
                       (" activations keep memory_budget 2", "memory_budget is for 'activations auto' (activations is keep)"),
                       (" graph per_rebuild edge_headroom 1.5", "edge_headroom must be in [0, 1] (got 1.5)"),
                       (" edge_headroom 0.01", "edge_headroom is for graph per_rebuild")):
        write_data(tmp_path / "data.lmp", atoms, ["C", "Cu"])
        script = RUN_0_SCRIPT.format(boundary=boundary, precision="fp64" + args, model=path, elements="C Cu",
                                     nktv2p=METAL_NKTV2P, pre="", extra="")
        run = lammps(script)
        assert run.returncode != 0 and text in run.output, run.output[-2000:]


@pytest.mark.parametrize("kokkos", [False, True])
def test_exchange_with_comm_style_tiled(lammps, tmp_path, small_model, kokkos):
    # comm_style tiled + an RCB balance: irregular subdomains, CommTiled's own swap pattern.
    # edgeframe/kk: CommTiledKokkos always calls the host pack functions, so /kk must not choose
    # LAMMPS-KOKKOS' device communication there.
    model, path = small_model
    atoms, boundary = structure("bcc_cu54")
    args = (*KOKKOS_ARGS, *PK_HOST_DATA) if kokkos else ()
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=3, pre="comm_style tiled",
                                       extra="balance 1.0 rcb", style_args=" ghost_mode exchange", args=args)
    assert "ghost mode exchange" in output and "LAMMPS-KOKKOS device communication" not in output
    assert ("pair edgeframe/kk" in output) == kokkos
    check_against_reference(expected(model, atoms, q), thermo, dump, per_atom=False)


def test_exchange_through_empty_ranks_that_relay(lammps, tmp_path, small_model):
    # Diamond with its cell stretched along x from 7.13 to 8.8 A: a 2.56 A vacuum gap, less than
    # r_cut (2.8 A), so edges cross it. On 8 1 1 ranks (1.1 A subdomains) the rank over
    # 6.6-7.7 A owns no atom (atoms reach x ~ 6.4 A; the rattle wraps a few to ~8.7 A), yet
    # every ghost that crosses the gap passes through it (ghost cutoff 4.8 A, several swaps):
    # its forward and reverse relays must carry features and gradients it never uses.
    model, path = small_model
    atoms, boundary = structure("diamond64")
    atoms = atoms.copy()
    atoms.cell[0, 0] = 8.8
    for mode in ("exchange", "shell"):
        q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=8, pre="processors 8 1 1",
                                           style_args=f" ghost_mode {mode}")
        check_against_reference(expected(model, atoms, q), thermo, dump, what=mode)


@pytest.mark.parametrize("nprocs,style,args,chunks", [
    (1, "", (), 1), (2, " ghost_mode exchange", (), 1), (2, " ghost_mode shell", (), 1), (1, "", KOKKOS_ARGS, 1),
    (1, " edge_chunk 400", (), None), (2, " edge_chunk 400 ghost_mode exchange", (), None),
    (1, " edge_chunk 400", KOKKOS_ARGS, None)],
    ids=["one-rank", "two-ranks-exchange", "two-ranks-shell", "kk", "one-rank-chunked", "two-ranks-chunked",
         "kk-chunked"])
def test_recomputed_activations_match_the_reference(lammps, tmp_path, small_model, nprocs, style, args, chunks):
    # activations recompute: each layer runs again in the backward pass instead of keeping its
    # activations (EvaluatorOptions::recompute_layers), optionally in edge chunks; the end-of-run
    # line counts the edge parts that were run again (three layers x chunks, one force call of
    # run 0; several chunks with edge_chunk 400 on this 64-atom box, whose count depends on
    # the rank's graph), so a recompute that silently did not happen fails here. With the
    # exchange the recomputed part excludes the exchange: only the layer's own work is
    # repeated, the communication is not.
    model, path = small_model
    atoms, boundary = structure("diamond64")
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=nprocs, args=args,
                                       style_args=" activations recompute" + style)
    m = re.search(r"activations recompute: (\d+) edge parts \(layers x edge chunks\) run again in the backward "
                  r"pass over 1 force calls", output)
    assert m, output[-1500:]
    count = int(m.group(1))
    assert count == 3 if chunks == 1 else (count % 3 == 0 and count > 3), count
    check_against_reference(expected(model, atoms, q), thermo, dump)


DIRECT = "MPI swaps made directly)"


IPC_USED = "edgeframe: direct swaps over CUDA IPC"
IPC_REFUSED = "edgeframe: exchange_transport cuda-ipc not possible here (not a CUDA build): direct MPI swaps"
IPC_REFUSED_BY_DEFAULT = "edgeframe: CUDA IPC not possible here"


@pytest.mark.parametrize("transport", ["mpi", "cuda-ipc"])
@pytest.mark.parametrize("name,nprocs,grid,precision", [
    ("diamond64", 2, "2 1 1", "fp64"), ("diamond64", 4, "1 2 2", "fp64"), ("diamond64", 8, "8 1 1", "fp64"),
    ("diamond64", 8, "2 2 2", "fp64"), ("bcc_cu54", 4, "1 2 2", "fp64"), ("cluster", 4, "4 1 1", "fp64"),
    ("triclinic_ccu16", 3, "3 1 1", "fp64"), ("diamond64", 4, "2 2 1", "fp32")])
def test_direct_mpi_exchange_matches_the_reference(lammps, tmp_path, small_model, odd_width_model, name,
                                                   nprocs, grid, precision, transport):
    # exchange_swaps direct: the staged exchange makes LAMMPS' brick swaps itself, from
    # the traces (sender, destination, lists), with no host pack / unpack. Subdomains thinner
    # than the cutoff (8 1 1: ghosts relayed over several swaps), self swaps in the first
    # dimension followed by MPI swaps that send atoms with their images (1 2 2), three
    # dimensions of MPI swaps (2 2 2), open boundaries (cluster), a triclinic cell, and fp32
    # rows of odd width (padding in the last double). Transport cuda-ipc: the swaps copy rows
    # device to device between the ranks' GPUs (edgeframe_peer.h) on CUDA builds (the ranks
    # share a node here); host builds say why not and keep the MPI swaps.
    lammps.style_keywords["exchange_stage"] = "yes"
    lammps.style_keywords["exchange_swaps"] = "direct"
    lammps.style_keywords["exchange_transport"] = transport
    model, path = odd_width_model if precision == "fp32" else small_model
    atoms, boundary = structure(name)
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=nprocs,
                                       pre=f"processors {grid}", precision=precision,
                                       style_args=" ghost_mode exchange fold_images no timing detail")
    assert DIRECT in output, output[-2000:]
    rows, how = exchange_rows_per_exchange(output)
    assert rows == 0 and how == "skipped", output[-1500:]    # no host pack / unpack at all
    ipc = transport == "cuda-ipc" and ON_GPU
    assert (IPC_USED in output) == ipc, output[-2000:]
    assert (IPC_REFUSED in output) == (transport == "cuda-ipc" and not ON_GPU), output[-2000:]
    label = "direct swaps over CUDA IPC (handshakes, device copies, waiting)" if ipc else "direct MPI swaps (MPI, waiting)"
    assert f"| {label} " in output, output[-2000:]
    if precision == "fp32":
        check_fp32_against_reference(model, atoms, q, thermo, dump)
    else:
        check_against_reference(expected(model, atoms, q), thermo, dump)


def staged_md_40_steps_agree(lammps, tmp_path, small_model, keyword, marker, used):
    """40 MD steps on 4 ranks (staged exchange, 2 2 1) for each of two values of `keyword`:
    `marker` is in the log exactly when used[setting], and the two trajectories agree to 1e-9."""
    lammps.style_keywords["exchange_stage"] = "yes"
    _, path = small_model
    atoms, _ = structure("diamond64")
    rows = {}
    for how in used:
        lammps.style_keywords[keyword] = how
        output, rows[how] = md_40_steps(lammps, tmp_path, path, atoms, "2 2 1", " ghost_mode exchange timing detail")
        assert (marker in output) == used[how], output[-1500:]
    a, b = rows.values()
    assert a.shape == b.shape == (5, 5)
    assert close(a, b, rel=1e-9)


def test_cuda_ipc_md_with_migration_equals_mpi_swaps(lammps, tmp_path, small_model):
    # 40 MD steps on 4 ranks, rebuilds every step: the outboxes are rebound (and grown) with the
    # swaps; the trajectory equals the MPI transport's.
    staged_md_40_steps_agree(lammps, tmp_path, small_model, "exchange_transport", IPC_USED,
                             {"cuda-ipc": ON_GPU, "mpi": False})


def test_cuda_ipc_is_the_default_transport_where_the_engine_runs_on_cuda(lammps, tmp_path, small_model):
    # Unset: CUDA builds take CUDA IPC (the ranks share a node here); host builds never try it
    # and print nothing about it.
    lammps.style_keywords["exchange_stage"] = "yes"
    lammps.style_keywords.pop("exchange_transport")
    model, path = small_model
    atoms, boundary = structure("diamond64")
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=2, pre="processors 2 1 1",
                                       style_args=" ghost_mode exchange fold_images no timing detail")
    assert DIRECT in output, output[-2000:]
    assert (IPC_USED in output) == ON_GPU, output[-2000:]
    assert IPC_REFUSED_BY_DEFAULT not in output and "cuda-ipc not possible" not in output, output[-2000:]
    check_against_reference(expected(model, atoms, q), thermo, dump)


def test_direct_mpi_exchange_relays_through_empty_ranks(lammps, tmp_path, small_model):
    # The vacuum-gap case of test_exchange_through_empty_ranks_that_relay with direct MPI: a rank
    # that owns no atom forwards and returns rows it never uses, swap after swap.
    lammps.style_keywords["exchange_stage"] = "yes"
    lammps.style_keywords["exchange_swaps"] = "direct"
    model, path = small_model
    atoms, boundary = structure("diamond64")
    atoms = atoms.copy()
    atoms.cell[0, 0] = 8.8
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=8, pre="processors 8 1 1",
                                       style_args=" ghost_mode exchange timing detail")
    assert DIRECT in output and "| direct MPI swaps (MPI, waiting) " in output, output[-1500:]
    check_against_reference(expected(model, atoms, q), thermo, dump)


def test_direct_mpi_exchange_md_with_migration_equals_lammps_swaps(lammps, tmp_path, small_model):
    # 40 MD steps on 4 ranks with rebuilds every step (the swaps' lists change every step, so
    # the traces are redone): direct MPI and LAMMPS' swaps give the same trajectory.
    staged_md_40_steps_agree(lammps, tmp_path, small_model, "exchange_swaps",
                             "| direct MPI swaps (MPI, waiting) ", {"direct": True, "lammps": False})


def test_swaps_are_traced_at_neighbour_list_builds_only(lammps, tmp_path, small_model):
    # Ghosts and swap lists change only where LAMMPS builds its neighbour lists, so the exchange
    # traces the swaps there and reuses the traces in between: 40 MD steps with builds every 5
    # steps give the shell mode's trajectory (which has no traces) with 9 traces (setup + 8).
    lammps.style_keywords["exchange_stage"] = "yes"
    _, path = small_model
    atoms, _ = structure("diamond64")
    output, rows = md_40_steps(lammps, tmp_path, path, atoms, "2 2 1", " ghost_mode exchange timing detail", every=5)
    _, shell = md_40_steps(lammps, tmp_path, path, atoms, "2 2 1", " ghost_mode shell", every=5)
    assert DIRECT in output, output[-1500:]
    builds = int(re.search(r"Neighbor list builds = (\d+)", output).group(1))
    traced = int(re.search(r"\((\d+) traced neighbour-list builds\)", split_line(output)).group(1))
    assert builds == 8 and traced == builds + 1, (builds, split_line(output))
    assert rows.shape == shell.shape == (5, 5)
    assert close(rows, shell, rel=1e-9)


def bus_gigabytes(output):
    split = split_line(output)
    return float(re.search(r"device <-> pinned host copies [\d.e+-]+ / [\d.e+-]+ \(([\d.e+-]+) GB per rank\)",
                           split).group(1))


def test_direct_mpi_moves_fewer_bytes_across_the_bus(lammps, tmp_path, small_model):
    # Direct MPI copies only the rows its swaps send and receive; the LAMMPS-swap path copies the
    # whole owned block up and the whole ghost block down (and back in reverse).
    lammps.style_keywords["exchange_stage"] = "yes"
    model, path = small_model
    atoms, boundary = structure("bcc_cu54")
    gb = {}
    for how in ("direct", "lammps"):
        lammps.style_keywords["exchange_swaps"] = how
        q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=2, pre="processors 2 1 1",
                                           style_args=" ghost_mode exchange timing detail")
        check_against_reference(expected(model, atoms, q), thermo, dump, per_atom=False)
        gb[how] = bus_gigabytes(output)
    assert 0 < gb["direct"] < gb["lammps"], gb


def test_shared_roots_add_one_after_another_with_threads(lammps, tmp_path, small_model):
    # 1 2 2: the x swaps are self swaps, so the y and z MPI swaps send atoms together with their
    # images, which share a root; with host threads on, those reverse adds must not race.
    lammps.style_keywords["exchange_threads"] = "2"
    lammps.style_keywords["exchange_parallel_bytes"] = "0"
    model, path = small_model
    atoms, boundary = structure("bcc_cu54")
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=4, pre="processors 1 2 2",
                                       style_args=" ghost_mode exchange")
    assert "exchange host copies on 2 OpenMP threads" in output
    check_against_reference(expected(model, atoms, q), thermo, dump)


def test_exchange_survives_a_comm_style_change(lammps, tmp_path, small_model):
    # `comm_style` replaces LAMMPS' Comm object between runs; the exchange must use the new one
    # (it kept the first one's pointer before: a segfault in the second run's trace).
    model, path = small_model
    atoms, boundary = structure("bcc_cu54")
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=2,
                                       style_args=" ghost_mode exchange", extra="run 0 post no\ncomm_style tiled")
    check_against_reference(expected(model, atoms, q), thermo, dump, per_atom=False)


def test_bad_direct_mpi_settings_are_errors(lammps, tmp_path, small_model):
    _, path = small_model
    atoms, boundary = structure("diamond64")
    write_data(tmp_path / "data.lmp", atoms, ["C", "Cu"])
    script = RUN_0_SCRIPT.format(boundary=boundary, precision="fp64 ghost_mode exchange fold_images no", model=path,
                                 elements="C Cu", nktv2p=METAL_NKTV2P, pre="", extra="")
    for keywords, text in (({"exchange_swaps": "nccl"}, "unknown exchange_swaps 'nccl' (valid: auto, direct, lammps)"),
                           ({"exchange_swaps": "direct", "exchange_self_swaps": "lammps"},
                            "exchange_swaps direct needs exchange_self_swaps skip"),
                           ({"exchange_transport": "carrier-pigeon"},
                            "unknown exchange_transport 'carrier-pigeon' (valid: auto, mpi, cuda-ipc)"),
                           ({"exchange_threads": "0"}, "exchange_threads must be >= 1 (got 0)"),
                           ({"exchange_stage": "maybe"}, "Expected boolean parameter instead of 'maybe'"),
                           ({"device_comm": "no"}, "device_comm applies to edgeframe/kk only")):
        lammps.style_keywords = dict(keywords)
        run = lammps(script)
        assert run.returncode != 0 and text in run.output, run.output[-2000:]


@pytest.mark.parametrize("name,nprocs,grid", [("diamond64", 4, "2 2 1"), ("cluster", 4, "4 1 1"),
                                              ("diamond64", 1, "1 1 1")])
def test_staged_exchange_matches_the_reference(lammps, tmp_path, small_model, name, nprocs, grid):
    # On CUDA builds node rows are reordered into atom order on the device and only the owned
    # (forward) or ghost (reverse) block of that stage crosses to the pinned host stage
    # (exchange_lammps_comm.h, PinnedStageTransport). exchange_stage yes takes that path on the CPU: a block
    # boundary off by one would leave ghosts with stale features and miss the reference.
    lammps.style_keywords["exchange_stage"] = "yes"
    model, path = small_model
    atoms, boundary = structure(name)
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=nprocs,
                                       pre=f"processors {grid}", style_args=" ghost_mode exchange fold_images no")
    assert "staged through pinned host memory" in output
    check_against_reference(expected(model, atoms, q), thermo, dump)



@pytest.mark.parametrize("name,nprocs,grid,precision", [
    ("diamond64", 1, "1 1 1", "fp64"),
    ("diamond64", 4, "2 2 1", "fp64"),
    ("cluster", 4, "4 1 1", "fp64"),       # relays through ranks that own nothing
    ("diamond64", 4, "2 2 1", "fp32"),
    ("diamond64", 1, "1 1 1", "fp32")])
def test_kokkos_device_communication_matches_the_reference(lammps, tmp_path, small_model, odd_width_model, name,
                                                           nprocs, grid, precision):
    # edgeframe/kk's device path hands the exchange to LAMMPS-KOKKOS' device communication
    # (pack_forward_comm_kokkos & co.) wherever LAMMPS keeps pair communication on the device:
    # always on CPU builds (host memory, the same code), on GPU builds with one rank or with
    # GPU-aware MPI. Without GPU-aware MPI a GPU build moves several ranks' pair communication to
    # the host (test below), so the multi-rank cases need it there.
    if nprocs > 1 and ON_GPU:
        pytest.skip("several ranks on a GPU build use device communication only with GPU-aware MPI")
    model, path = odd_width_model if precision == "fp32" else small_model    # fp32: rows end mid-slot
    atoms, boundary = structure(name)
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=nprocs,
                                       args=(*KOKKOS_ARGS, *PK_HOST_DATA), pre=f"processors {grid}",
                                       style_args=" ghost_mode exchange fold_images no", precision=precision)
    assert "LAMMPS-KOKKOS device communication" in output, output[-2000:]
    if precision == "fp64":
        check_against_reference(expected(model, atoms, q), thermo, dump)
    else:
        check_fp32_against_reference(model, atoms, q, thermo, dump)


@pytest.mark.parametrize("nprocs", [1, 4])
def test_kokkos_exchange_through_host_buffers(lammps, tmp_path, small_model, nprocs):
    # device_comm no (and, on GPU builds, several ranks without GPU-aware MPI, which
    # the 2-GPU runs of doc/performance.md take): the exchange goes through LAMMPS' host buffers.
    lammps.style_keywords["device_comm"] = "no"
    model, path = small_model
    atoms, boundary = structure("diamond64")
    q, thermo, dump, output = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=nprocs,
                                       args=(*KOKKOS_ARGS, *PK_HOST_DATA), pre="processors * * *",
                                       style_args=" ghost_mode exchange fold_images no")
    assert "ghost mode exchange" in output and "LAMMPS-KOKKOS device communication" not in output, output[-2000:]
    # CPU builds: the device path, whose host-memory "device" style LAMMPS sends to the host pack
    # functions. GPU builds: LAMMPS would send a device style's forward communication to the
    # device, so the host buffers mean the host-staged path.
    assert ("device-resident path" in output) == (not ON_GPU), output[-2000:]
    check_against_reference(expected(model, atoms, q), thermo, dump)


@pytest.mark.parametrize("name,nprocs,grid,device_comm", [
    ("diamond64", 4, "2 2 1", "yes"), ("diamond64", 4, "2 2 1", "no"), ("diamond64", 8, "8 1 1", "yes"),
    ("cluster", 4, "4 1 1", "yes"), ("triclinic_ccu16", 3, "3 1 1", "yes")])
def test_kokkos_device_path_on_several_ranks_equals_one_rank(lammps, tmp_path, small_model, name, nprocs, grid,
                                                              device_comm):
    # edgeframe/kk on several ranks keeps positions, forces and the per-layer features in the
    # Kokkos device memory space (issue 28 item 1): nodes are the owned atoms and the ghosts in
    # their lists, numbered on the device; ghost forces return through LAMMPS' reverse
    # communication. Against one rank (images folded) to fp64 rounding: energy, virial, forces,
    # per-atom energies and virials. diamond 8 1 1: subdomains thinner than a cutoff (relays);
    # cluster 4 1 1: two ranks own no atom and take part in every exchange as relays.
    # device_comm no: the exchange through LAMMPS' host buffers (on GPU builds that is the
    # host-staged path, test_kokkos_exchange_through_host_buffers).
    if device_comm == "no" and ON_GPU:
        pytest.skip("GPU builds take the host-staged path with device_comm no")
    _, path = small_model
    atoms, boundary = structure(name)
    args = (*KOKKOS_ARGS, *PK_HOST_DATA)
    _, thermo_1, dump_1, out_1 = run_case(lammps, tmp_path, path, atoms, boundary, args=args)
    assert "periodic images folded onto owners" in out_1, out_1[-2000:]
    _, thermo_n, dump_n, out_n = run_case(lammps, tmp_path, path, atoms, boundary, nprocs=nprocs, args=args,
                                          pre=f"processors {grid}", style_args=f" device_comm {device_comm}")
    assert ("LAMMPS-KOKKOS device communication" in out_n) == (device_comm == "yes" and not ON_GPU), out_n[-2000:]
    assert "device-resident path on" in out_n and f"per-layer exchange, {nprocs} rank(s)" in out_n, out_n[-2000:]
    assert "staged through the host" not in out_n
    assert close(thermo_n[1:], thermo_1[1:], rel=1e-12, floor=1e-12)
    assert close(dump_n[:, 1:], dump_1[:, 1:], rel=1e-12, floor=1e-12)


def test_kokkos_device_path_md_with_migration_equals_the_plain_style(lammps, tmp_path, small_model):
    # 40 steps of MD on 4 ranks with a rebuild at every step (atoms migrate, ghosts and swap lists
    # change): edgeframe/kk's device path and the plain style's host path, the same trajectory.
    _, path = small_model
    atoms, _ = structure("diamond64")
    out_h, rows_h = md_40_steps(lammps, tmp_path, path, atoms, "4 1 1", " ghost_mode exchange")
    out_k, rows_k = md_40_steps(lammps, tmp_path, path, atoms, "4 1 1", " ghost_mode exchange",
                                args=(*KOKKOS_ARGS, *PK_HOST_DATA))
    assert "per-layer exchange, 4 rank(s)" in out_k and "pair edgeframe/kk" not in out_h, out_k[-2000:]
    assert rows_k.shape == rows_h.shape == (5, 5)
    assert close(rows_k, rows_h, rel=1e-9)
