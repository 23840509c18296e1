"""LAMMPS-level tests: run the real lmp binary with the real plugin on real input scripts."""
import os
import subprocess
import textwrap
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--lmp", default=os.environ.get("EDGEFRAME_LMP", "lmp"), help="LAMMPS executable")
    parser.addoption("--plugin", default=os.environ.get("EDGEFRAME_PLUGIN", ""), help="path to edgeframeplugin.so")


class LammpsRun:
    """Runs one input script in a scratch folder and keeps what LAMMPS printed."""

    def __init__(self, lmp: str, plugin: str, workdir: Path):  # plugin: absolute path
        self.lmp, self.plugin, self.workdir = lmp, plugin, workdir

    def __call__(self, script: str, args=(), nprocs: int = 1, timeout: int = 300):
        text = f"plugin load {self.plugin}\n" + textwrap.dedent(script)
        inp = self.workdir / "in.test"
        inp.write_text(text)
        cmd = [self.lmp, "-in", str(inp), "-log", "none", *args]
        if nprocs > 1:
            cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(nprocs), *cmd]
        env = dict(os.environ, OMP_NUM_THREADS="1")
        proc = subprocess.run(cmd, cwd=self.workdir, capture_output=True, text=True, timeout=timeout, env=env)
        proc.output = proc.stdout + proc.stderr
        return proc


@pytest.fixture
def lammps(request, tmp_path):
    plugin = request.config.getoption("--plugin")
    if not plugin or not Path(plugin).exists():
        pytest.fail(f"--plugin must name the built edgeframeplugin.so (got '{plugin}')")
    return LammpsRun(request.config.getoption("--lmp"), str(Path(plugin).resolve()), tmp_path)
