"""tools/gate.py's plumbing, on the CPU with a small model: the case file it writes is read by
bench/edgeframe_bench --case (same edges, same model) and the engine reproduces the fp64
reference; its LAMMPS data file gives LAMMPS the same energy. The GPU gate trusts both."""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
import gate  # noqa: E402
from reference_case import KOKKOS_ARGS, ON_GPU  # noqa: E402


def kokkos_devices():
    """What follows `-k on` in the harness' Kokkos arguments ("t 1" here, "g 1" on the GPU
    machine): a CUDA build of LAMMPS refuses "t 1" alone (seen on the H200, 2026-11-30e)."""
    args = list(KOKKOS_ARGS)
    first = args.index("on") + 1
    last = first
    while last < len(args) and not args[last].startswith("-"):
        last += 1
    return " ".join(args[first:last])

SMALL = dict(channels=8, hidden_channels=8, ffn_channels=8, layers=2, radial_hidden=8, readout_hidden=8,
             edge_emb=4, r_cut=3.0, avg_neighbors=20.0)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    return gate.build_case("bcc", 54, "L2", tmp_path_factory.mktemp("gate"), **SMALL)


@pytest.fixture(scope="module")
def bench(request):
    """bench/edgeframe_bench of the build the plugin under test comes from."""
    return Path(request.config.getoption("--plugin")).resolve().parents[2] / "bench" / "edgeframe_bench"


def test_engine_reads_the_case_file_and_matches_the_reference(bench, case):
    args = argparse.Namespace(bench=str(bench), repeats=1, warmup=1, case_timeout=300, memory_budget=0)
    # The engine-fp64-keep, engine-fp64-recompute and engine-fp64 (activations auto: on the host
    # without a budget it keeps all) columns, then auto under a budget of 1 kB, which no plan
    # meets: every layer recomputed in the smallest chunks.
    for activations, budget, recomputed in (("keep", 0, False), ("recompute", 0, True), ("auto", 0, False),
                                            ("auto", 1e-6, True)):
        args.memory_budget = budget
        r = gate.run_engine(args, case, "fp64", activations=activations)
        assert "error" not in r, r
        assert r["recompute_layers"] == recomputed, r
        assert r["activations"] == ("keep" if not recomputed else "recompute all layers"), r
        assert r["n_atoms"] == case["n_atoms"] and r["n_edges"] == case["n_edges"]
        assert r["max_force_err_rel"] < 1e-10, r
        assert r["energy_err"] < 1e-10 * abs(case["ref"]["energy"]), r


def test_a_failing_engine_column_reports_the_benchs_error(bench, case, tmp_path):
    # The bench's error line is JSON even when the message has quotes (a path here; torch's CUDA
    # out-of-memory text on the H200): the column then carries that message.
    args = argparse.Namespace(bench=str(bench), repeats=1, warmup=1, case_timeout=300, memory_budget=0)
    missing = tmp_path / 'no "such" model.safetensors'
    r = gate.run_engine(args, dict(case, potential=missing), "fp64")
    assert "error" in r and 'no "such" model' in r["error"], r
    # The bench's own line parses as JSON (gate.py would also pass on an unparsable one).
    p = subprocess.run([str(bench), "--case", str(case["case"]), "--potential", str(missing)],
                       capture_output=True, text=True, timeout=300)
    line = next(ln for ln in p.stdout.splitlines() if ln.startswith("RESULT "))
    assert 'no "such" model' in json.loads(line[7:])["error"], line


def test_lammps_data_file_gives_the_reference_energy(lammps, case):
    run = lammps(f"""
        units metal
        atom_style atomic
        atom_modify map array
        read_data {case['data']}
        pair_style edgeframe precision fp64
        pair_coeff * * {case['potential']} {' '.join(case['elements'])}
        thermo_style custom step pe
        thermo_modify format float %.15g
        run 0
        """)
    assert run.returncode == 0, run.output[-2000:]
    lines = run.output.splitlines()
    k = next(i for i, ln in enumerate(lines) if ln.split()[:2] == ["Step", "PotEng"])
    pe = float(lines[k + 1].split()[1])
    assert abs(pe - case["ref"]["energy"]) < 1e-10 * abs(case["ref"]["energy"]), (pe, case["ref"]["energy"])


def test_lammps_column_runs_and_times_force_calls(lammps, case):
    # The LAMMPS column exactly as the GPU gate runs it (static positions, the /kk style,
    # LAMMPS-KOKKOS' GPU package defaults), with Kokkos OpenMP on the CPU build: a column that
    # fails here would fail on the GPU too and waste device time.
    args = argparse.Namespace(lmp=lammps.lmp, plugin=lammps.plugin, lmp_kokkos=kokkos_devices(),
                              lmp_package="neigh full newton off", case_timeout=300, lmp_skin=None)
    r = gate.run_lammps(args, case, "fp64", steps=3)
    assert "error" not in r, r
    # Per step from runs of 3 and 9 steps: (Loop time of 9 - Loop time of 3) / 6.
    assert r["steps"] == 6 and r["runs"] == [3, 9] and r["median_s"] > 0, r
    # The column's force error: the last step's forces (write_dump, by atom ID) against the fp64
    # reference; the data file's positions carry 12 decimals, hence not 1e-12.
    assert r["forces_finite"] and r["max_force_err_rel"] < 1e-8, r
    # Device memory: the pair style's end-of-run line, written by GPU builds only.
    assert ("peak_bytes" in r) == ON_GPU, r
    log = case["data"].with_suffix(".log").read_text()
    assert "edgeframe/kk: device-resident path" in log



def test_lammps_graph_column_keeps_its_graph_and_gives_the_reference_forces(lammps, case):
    # The lammps-<precision>-graph column: graph per_rebuild and cuda_graph yes, at a skin of
    # 1.5 A (bcc's third shell, 4.06 A, is beyond the case's r_cut of 3 A and within r_cut + skin):
    # the candidates within r_cut + skin are kept, the step evaluates those within r_cut (the
    # case's edges, no more) and its forces are the reference's. On CPU builds cuda_graph warns
    # and captures nothing.
    args = argparse.Namespace(lmp=lammps.lmp, plugin=lammps.plugin, lmp_kokkos=kokkos_devices(),
                              lmp_package="neigh full newton off", case_timeout=300, lmp_skin=1.5)
    r = gate.run_lammps(args, case, "fp64", steps=3, graph=True)
    assert "error" not in r, r
    assert r["forces_finite"] and r["max_force_err_rel"] < 1e-8, r
    assert r["lammps_edges"] == case["n_edges"], r
    # The last run, of 9 steps, makes 10 force calls (its setup's too). The kept graph keeps its
    # memory and size across the runs (static positions, the automatic spare edges), so the step
    # captured in the first run replays at all of them, with no new capture. CPU builds capture
    # nothing.
    assert r["cuda_graph_replays"] == (10 if ON_GPU else 0), r
    assert r["cuda_graph_captures"] == 0, r
    log = case["data"].with_suffix(".graph.log").read_text()
    assert "edgeframe: graph per_rebuild: candidate pairs within r_cut + skin" in log
    assert ON_GPU or "cuda_graph yes has no effect here (this build runs on the host)" in log


def test_engine_column_with_scratch_poisoning_gives_the_reference_forces(request, case):
    """An engine column in another environment (what --bench-b-env gives the engine-b columns):
    with the scratch-poisoning debug switch on (doc/engine.md "Debugging switches") every fresh
    workspace slot starts as NaN: the forces must still be the reference's (no kernel reads
    scratch it did not write)."""
    bench = Path(request.config.getoption("--plugin")).resolve().parents[2] / "bench" / "edgeframe_bench"
    args = argparse.Namespace(bench=str(bench), repeats=1, warmup=1, case_timeout=300)
    good = gate.run_engine(args, case, "fp64", env=dict(os.environ, EDGEFRAME_POISON_SCRATCH="1"))
    assert "error" not in good, good
    assert good["forces_finite"] and good["max_force_err_rel"] < 1e-10, good


def test_graph_column_replays_on_cuda_and_matches_the_reference(request, case):
    """engine-<precision>-graph runs the bench with --cuda-graph: on CUDA one capture and a
    replay for every step after the first two warm-ups; on host backends the option does
    nothing. Either way the forces are the reference's."""
    bench = Path(request.config.getoption("--plugin")).resolve().parents[2] / "bench" / "edgeframe_bench"
    args = argparse.Namespace(bench=str(bench), repeats=3, warmup=2, case_timeout=300)
    r = gate.run_engine(args, case, "fp64", cuda_graph=True)
    assert "error" not in r, r
    assert r["max_force_err_rel"] < 1e-10, r
    on_cuda = r["engine"] == "Cuda"
    assert r["cuda_graph_captures"] == (1 if on_cuda else 0), r
    assert r["cuda_graph_replays"] == (args.repeats + args.warmup - 1 if on_cuda else 0), r


def test_no_reference_case_times_the_engine_without_a_force_error(request, tmp_path):
    """--no-reference (cases too large for the PyTorch reference in a call): the case is built
    without reference forces, the engine column still runs on the same edges and reports finite
    forces and no force error, and the table prints "-" there."""
    bench = Path(request.config.getoption("--plugin")).resolve().parents[2] / "bench" / "edgeframe_bench"
    args = argparse.Namespace(bench=str(bench), repeats=1, warmup=1, case_timeout=300)
    c = gate.build_case("bcc", 54, "L2", tmp_path, reference=False, **SMALL)
    assert c["ref"] is None and c["ref_fp32_max_force_err_rel"] is None
    r = gate.run_engine(args, c, "fp64")
    assert "error" not in r, r
    assert r["n_edges"] == c["n_edges"] and r["forces_finite"]
    assert "max_force_err" not in r
    row = gate.finish_row(dict(r, tag=c["tag"], n_atoms=c["n_atoms"], n_edges=c["n_edges"], column="engine-fp64"),
                          c["n_atoms"])
    assert gate.markdown([row]).splitlines()[-1].endswith("| - |")


def test_bench_plan_prints_the_memory_models_peak_for_each_plan(bench):
    # edgeframe_bench --plan: no step, one PLAN line per plan. For a million atoms of 64 edges
    # each with the shipped carbon v2 file: keep > recompute > stream in the same chunks, and
    # auto under 140 GB streams in chunks that fit it; a v1 file has no stream plan; without a
    # potential the bench says what --plan needs.
    def plans(potential, budget):
        out = subprocess.run([str(bench), "--plan", "64000000,1000000", "--potential", str(potential),
                              "--precision", "fp32", "--edge-chunk", "1000000", "--memory-budget", str(budget)],
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return [json.loads(line[5:]) for line in out.stdout.splitlines() if line.startswith("PLAN ")]

    keep, recompute, stream, auto = plans(REPO / "potentials" / "C-diamond-v2.safetensors", 140)
    assert keep["plan"] == "keep" and not keep["fits"]
    assert recompute["plan"] == "recompute all layers in edge chunks of 1000000"
    assert stream["plan"] == "stream all layers in edge chunks of 1000000"
    assert keep["predicted_peak_bytes"] > recompute["predicted_peak_bytes"] > stream["predicted_peak_bytes"]
    assert auto["plan"].startswith("stream all layers in edge chunks of ") and auto["fits"], auto
    assert auto["predicted_peak_bytes"] <= 140e9
    v1 = plans(REPO / "potentials" / "C-diamond.safetensors", 140)
    assert [p["plan"].split()[0] for p in v1[:2]] == ["keep", "recompute"]
    assert not any(p["plan"].startswith("stream") for p in v1)
    out = subprocess.run([str(bench), "--plan", "1000,10"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--plan EDGES,NODES needs --potential FILE" in out.stderr
    # A size that is not two counts, or a file that cannot be read: an error line, no PLAN line.
    for size, potential, said in (("1000x,10", "C-diamond-v2.safetensors", "not a count of edges or nodes: '1000x'"),
                                  ("1000,10", "no-such-file.safetensors", "no-such-file.safetensors")):
        out = subprocess.run([str(bench), "--plan", size, "--potential", str(REPO / "potentials" / potential)],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and said in out.stderr and "PLAN" not in out.stdout, (out.stdout, out.stderr)
