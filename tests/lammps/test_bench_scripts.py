"""The GPU-only benchmark scripts, run on the CPU so that they do not rot between GPU sessions:
bench/gpu_scaling.sh (issue #8's 1-vs-2-GPU table) with SCALING_ON_CPU=1 on a tiny box. A script
error found here would otherwise cost a call on the two-GPU machine."""
import os
import subprocess
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
