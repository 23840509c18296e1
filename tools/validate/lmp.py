"""Shared pieces of the LAMMPS validation scripts (tools/validate/*.py).

Each script runs the same LAMMPS input twice: with the edgeframe plugin (pair_style edgeframe,
the potential file) and with the classical potential the data were made with (Tersoff
SiC.tersoff C entry / Cu_mishin1.eam.alloy, tools/datagen/recipes.py). Needs `lmp` on PATH and
LAMMPS_POTENTIALS (source $(scripts/bootstrap.sh --print-env)).
"""
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from datagen.lammps_driver import potential_block  # noqa: E402
from datagen.recipes import POTENTIALS  # noqa: E402

MASS = {el: p["mass"] for el, p in POTENTIALS.items()}
BAR_TO_GPA = 1e-4
# relaxed classical lattice constants (doc/data.md, box/relax in this LAMMPS)
A0_CLASSICAL = {("C", "diamond"): 3.56583, ("Cu", "fcc"): 3.61493, ("Cu", "bcc"): 2.86822}
DEFAULT_PLUGIN = ROOT / "build" / "src" / "lammps" / "edgeframeplugin.so"


def header(model, plugin):
    """Lines before the box is made (plugin load, units, atom map)."""
    lines = []
    if model != "classical":
        lines.append(f"plugin load {pathlib.Path(plugin).resolve()}")
    lines += ["units metal", "atom_style atomic", "atom_modify map array", "boundary p p p"]
    return "\n".join(lines) + "\n"


def pair_block(model, element, potential, precision):
    """pair_style / pair_coeff (+ mass) for 'classical' or 'edgeframe'."""
    if model == "classical":
        return potential_block(POTENTIALS[element])
    return (f"mass 1 {MASS[element]}\n"
            f"pair_style edgeframe precision {precision}\n"
            f"pair_coeff * * {pathlib.Path(potential).resolve()} {element}\n")


def run_lmp(text, workdir, tag="", echo=None):
    """Run `lmp` on `text` in workdir (one thread); stream screen lines matching `echo`
    (a callable line -> str or None) with a prefix; return the log text."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "in.lmp").write_text(text)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    t0 = time.time()
    proc = subprocess.Popen(["lmp", "-in", "in.lmp", "-log", "log.lammps", "-nocite"],
                            cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env=env)
    tail = []
    for line in proc.stdout:
        tail = (tail + [line])[-40:]
        msg = echo(line) if echo else None
        if msg:
            print(f"[{tag} {time.time() - t0:6.0f} s] {msg}", flush=True)
    rc = proc.wait()
    if rc != 0:
        raise RuntimeError(f"lmp failed (rc {rc}) in {workdir}:\n{''.join(tail)}")
    return (workdir / "log.lammps").read_text()
