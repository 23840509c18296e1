"""LAMMPS-level tests: run the real lmp binary with the real plugin on real input scripts."""
import os
import re
import subprocess
import textwrap
from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--lmp", default=os.environ.get("EDGEFRAME_LMP", "lmp"), help="LAMMPS executable")
    parser.addoption("--plugin", default=os.environ.get("EDGEFRAME_PLUGIN", ""), help="path to edgeframeplugin.so")
    parser.addoption("--python-dir", default=os.environ.get("EDGEFRAME_PYTHON_DIR", ""),
                     help="folder holding the built edgeframe Python package (<build>/python)")


EDGEFRAME_STYLE = re.compile(r"^(\s*pair_style\s+(?:hybrid(?:/overlay|/scaled)?\s+.*?)?edgeframe\b)", re.MULTILINE)


class LammpsRun:
    """Runs one input script in a scratch folder and keeps what LAMMPS printed.

    style_keywords: pair_style edgeframe keywords (name -> value) added to every edgeframe
    pair_style line of the scripts this run is given, also inside hybrid (the exchange tests
    set their exchange_* settings here)."""

    def __init__(self, lmp: str, plugin: str, workdir: Path):  # plugin: absolute path
        self.lmp, self.plugin, self.workdir = lmp, plugin, workdir
        self.style_keywords = {}

    def with_style_keywords(self, script: str) -> str:
        if not self.style_keywords:
            return script
        extra = "".join(f" {k} {v}" for k, v in self.style_keywords.items())
        return EDGEFRAME_STYLE.sub(lambda m: m.group(1) + extra, script)

    def __call__(self, script: str, args=(), nprocs: int = 1, timeout: int = 300):
        text = f"plugin load {self.plugin}\n" + self.with_style_keywords(textwrap.dedent(script))
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
