"""The GPU-only benchmark scripts, run on the CPU so that they do not rot between GPU sessions:
bench/gpu_scaling.sh (issue #8's 1-vs-2-GPU table) with SCALING_ON_CPU=1 on a tiny box, and
bench/uma_gate.sh (issue #26's gate with fairchem columns) with UMA_GATE_SMOKE=1. A script error
found here would otherwise cost a call on the GPU machine."""
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_gpu_scaling_script_produces_its_table(request, tmp_path):
    plugin = str(Path(request.config.getoption("--plugin")).resolve())
    lmp_dir = str(Path(request.config.getoption("--lmp")).resolve().parent)
    env = dict(os.environ, SCALING_ON_CPU="1", EDGEFRAME_PLUGIN=plugin, PATH=lmp_dir + os.pathsep + os.environ["PATH"])
    run = subprocess.run(["bash", str(REPO / "bench" / "gpu_scaling.sh"), str(tmp_path / "out"), "2", "2"],
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [ln for ln in run.stdout.splitlines() if ln.startswith("| strong") or ln.startswith("| weak")]
    assert len(rows) == 4, run.stdout
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert "failed" not in row and float(cells[3]) > 0, row    # ms/step measured
    atoms = {cells[0]: int(cells[2]) for cells in ([c.strip() for c in r.strip("|").split("|")] for r in rows)}
    assert atoms["strong-r2-1gpu"] == atoms["strong-r2-2gpu"] == 64 and atoms["weak-r2-2gpu"] == 128, atoms


def test_uma_gate_runs_on_the_cpu_and_matches_fairchem(request, tmp_path):
    """bench/uma_gate.sh (issue #26's gate with fairchem columns) end to end with UMA_GATE_SMOKE=1:
    fairchem builds a small random UMA-like checkpoint and its fp64 references of three
    structures, the converter converts it, edgeframe's engine and edgeframe/kk run fairchem's
    structures, and the table names every column; edgeframe's fp64 forces equal fairchem's."""
    fairchem_python = os.environ.get("EDGEFRAME_FAIRCHEM_PYTHON", "")
    assert fairchem_python and Path(fairchem_python).exists(), "EDGEFRAME_FAIRCHEM_PYTHON: the fairchem venv"
    plugin = Path(request.config.getoption("--plugin")).resolve()
    build = plugin.parents[2]   # <build>/src/lammps/edgeframeplugin.so
    lmp_dir = str(Path(request.config.getoption("--lmp")).resolve().parent)
    env = dict(os.environ, UMA_GATE_SMOKE="1", BUILD_DIR=str(build), EDGEFRAME_PYTHON=sys.executable,
               PATH=lmp_dir + os.pathsep + os.environ["PATH"])
    out = tmp_path / "gate"
    run = subprocess.run(["bash", str(REPO / "bench" / "uma_gate.sh"), str(out)], cwd=REPO,
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = json.loads((out / "gate.json").read_text())["rows"]
    columns = {(r["structure"], r["column"]): r for r in rows}
    for s in ("diamond_16", "bcc_cu_16", "diamond_64"):
        for c in ("fairchem general_fp32", "edgeframe engine fp32", "edgeframe engine fp64"):
            assert columns[(s, c)]["status"] == "ok" and columns[(s, c)]["ms"] > 0, (s, c, run.stdout[-2000:])
    for s in ("diamond_16", "bcc_cu_16"):
        assert columns[(s, "edgeframe LAMMPS fp64")]["ms"] > 0, (s, run.stdout[-2000:])
    # fp64 against fairchem fp64 on fairchem's own structures: 1e-16 (engine) and 1e-14 eV/A
    # (LAMMPS, its dump's 17 digits after LAMMPS' own sums) measured; forces here are O(0.1-1) eV/A.
    for (s, c), r in columns.items():
        if c.endswith("fp64"):
            assert r["dF"] < 1e-10, (s, c, r)
        elif c.startswith("edgeframe") and c.endswith("fp32"):
            assert r["dF"] < 1e-5, (s, c, r)


def test_v2_memory_script_runs_every_plan_on_the_cpu(request, tmp_path):
    """bench/v2_memory.sh (issue #26's memory targets) end to end with V2_MEMORY_SMOKE=1: the
    shipped carbon v2 file on 512- and 4096-atom diamond; keep, chunked recompute, stream and
    auto under a budget that only streaming can meet (it says so in its plan), each run's
    forces against keep's within fp32 rounding, the large case in the engine and through
    edgeframe/kk, and the table names every run."""
    build = Path(request.config.getoption("--plugin")).resolve().parents[2]
    lmp_dir = str(Path(request.config.getoption("--lmp")).resolve().parent)
    env = dict(os.environ, V2_MEMORY_SMOKE="1", BUILD_DIR=str(build), EDGEFRAME_PYTHON=sys.executable,
               PATH=lmp_dir + os.pathsep + os.environ["PATH"])
    out = tmp_path / "memory"
    run = subprocess.run(["bash", str(REPO / "bench" / "v2_memory.sh"), str(out)], cwd=REPO,
                         capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    rows = {r["run"]: r for r in json.loads((out / "memory.json").read_text())}
    assert set(rows) == {"small-keep", "small-recompute", "small-stream", "small-auto-budget", "large-auto",
                         "large-lammps"}
    assert all("error" not in r for r in rows.values()), run.stdout[-3000:]
    assert rows["small-keep"]["activations"] == "keep"
    assert rows["small-recompute"]["activations"] == "recompute all layers in edge chunks of 2048"
    assert rows["small-stream"]["activations"] == "stream all layers in edge chunks of 2048"
    assert rows["small-auto-budget"]["activations"].startswith("stream all layers"), rows["small-auto-budget"]
    assert rows["large-auto"]["n_atoms"] == rows["large-lammps"]["n_atoms"] == 4096
    assert rows["large-lammps"]["n_edges"] == rows["large-auto"]["n_edges"], rows["large-lammps"]
    assert rows["large-lammps"]["median_s"] > 0
    for name in ("small-recompute", "small-stream", "small-auto-budget"):
        assert rows[name]["max_dF_rel_to_keep"] < 1e-6, rows[name]
    table = (out / "memory.md").read_text()
    assert all(name in table for name in rows)
