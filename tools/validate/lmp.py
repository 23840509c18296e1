"""Shared pieces of the LAMMPS validation scripts (tools/validate/*.py).

Each script runs the same LAMMPS input twice: with the edgeframe plugin (pair_style edgeframe,
the potential file) and with the classical potential the data were made with (Tersoff
SiC.tersoff C entry / Cu_mishin1.eam.alloy, tools/datagen/recipes.py). Needs `lmp` on PATH and
LAMMPS_POTENTIALS (source $(scripts/bootstrap.sh --print-env)).
"""
import os
import pathlib
import re
import subprocess
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.append(str(ROOT / "tools"))

from datagen.lammps_driver import potential_block  # noqa: E402
from datagen.recipes import POTENTIALS  # noqa: E402

MASS = {el: p["mass"] for el, p in POTENTIALS.items()}
BAR_TO_GPA = 1e-4
# relaxed classical lattice constants (doc/data.md, box/relax in this LAMMPS)
A0_CLASSICAL = {("C", "diamond"): 3.56583, ("Cu", "fcc"): 3.61493, ("Cu", "bcc"): 2.86822}
# How far a force reaches in the classical potentials (A): an atom's force depends on atoms up to
# twice the cutoff away (Tersoff's bond order: neighbours of neighbours, R + D = 2.1 A; EAM's
# embedding: the density at each neighbour, cutoff 5.50679 A)
FORCE_RANGE_CLASSICAL = {"C": 2 * 2.1, "Cu": 2 * 5.50679}
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


class Failed:
    """A value that could not be computed: a LAMMPS error, a timeout, a NaN. Reported as
    "failed: <reason>" in the tables; never raised further than the section."""

    def __init__(self, reason):
        self.reason = " ".join(str(reason).split())[:300]

    def __repr__(self):
        return f"failed: {self.reason}"


RESULT_KEYS = ["pe", "pxx", "pyy", "pzz", "pyz", "pxz", "pxy", "vol", "lx", "ly", "lz", "xy",
               "xz", "yz", "fmax", "fnorm", "atoms", "temp", "etotal"]


def last_error(text):
    for line in reversed(text.splitlines()):
        if "ERROR" in line or "Exception" in line or "terminate called" in line:
            return line.strip()
    tail = [l for l in text.splitlines() if l.strip()][-3:]
    return " | ".join(tail) if tail else "no output"


class Runner:
    """Runs lists of configurations in LAMMPS with the model (pair_style edgeframe) or the
    reference (the classical potential), one process per list, `clear` between configurations.

    A configuration is a dict: pos [N, 3], cell [3, 3] (rows, restricted triclinic), cmds (list
    of LAMMPS lines after the pair style: minimize, fix, run ...; a `run 0` always follows),
    forces (bool: dump the final forces and positions). The result of each is a dict with
    RESULT_KEYS (LAMMPS thermo values, metal units, pressures in bar), 'log' (what LAMMPS wrote
    for it), 'forces' and 'pos' [N, 3] if asked; or a Failed. When a configuration fails (a
    LAMMPS error, a crash, a timeout) the process is restarted from the next one.
    self_check: the model is the reference too (the suite validating the classical potential
    against itself: every error must be exactly 0)."""

    def __init__(self, element, potential, plugin, precision="fp64", lmp="lmp", workdir=None,
                 timeout_per_config=300.0, self_check=False):
        self.element, self.potential, self.plugin = element, potential, plugin
        self.self_check = self_check
        self.precision, self.lmp, self.workdir = precision, lmp, pathlib.Path(workdir)
        self.timeout_per_config = timeout_per_config
        self.count = 0

    def pair(self, model):
        if model == "reference" or self.self_check:
            return potential_block(POTENTIALS[self.element]).strip()
        return pair_block("edgeframe", self.element, self.potential, self.precision).strip()

    def script(self, model, configs, first, work):
        from crystal import write_data
        lines = []
        for k, cfg in enumerate(configs):
            kk = first + k
            write_data(work / f"c{kk}.data", cfg["pos"], cfg["cell"], MASS[self.element])
            plugin = model == "model" and not self.self_check and k == 0
            lines += ["clear", header("edgeframe" if plugin else "classical", self.plugin).strip(),
                      f"print 'EFBEGIN {kk}'", f"read_data c{kk}.data", self.pair(model),
                      "neighbor 1.0 bin", "thermo_modify format float %.15g"]
            lines += list(cfg.get("cmds", []))
            # thermo keywords in the EFRES line need a thermo style that computes the pressure
            lines += ["thermo_style custom step temp pe etotal press pxx pyy pzz pyz pxz pxy fmax fnorm",
                      "thermo_modify format float %.15g", "run 0", "print 'EFRES " + str(kk) + " "
                      + " ".join(f"$({key}:%.17g)" if key != "atoms" else "$(atoms)"
                                 for key in RESULT_KEYS) + "'"]
            if cfg.get("forces"):
                lines.append(f"write_dump all custom f{kk}.dump id x y z fx fy fz modify sort id "
                             "format float %.17g")
        return "\n".join(lines) + "\n"

    def run(self, model, configs, tag="", timeout=None):
        """List of results (dict or Failed), one per configuration."""
        self.count += 1
        work = self.workdir / f"{self.count:03d}-{model}-{tag}".replace(" ", "_")
        work.mkdir(parents=True, exist_ok=True)
        results = [None] * len(configs)
        first = 0
        while first < len(configs):
            rest = configs[first:]
            limit = timeout or self.timeout_per_config * len(rest)
            text = self.script(model, rest, first, work)
            (work / "in.lmp").write_text(text)
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            try:
                proc = subprocess.run([self.lmp, "-in", "in.lmp", "-log", "log.lammps", "-nocite",
                                       "-screen", "none"], cwd=work, capture_output=True,
                                      text=True, env=env, timeout=limit)
                rc, out, why = proc.returncode, proc.stdout + proc.stderr, None
            except subprocess.TimeoutExpired as err:
                rc, why = -1, f"timeout after {limit:.0f} s"
                out = (err.stdout or b"").decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
            log = (work / "log.lammps").read_text() if (work / "log.lammps").exists() else ""
            self.parse(log, work, results, configs)
            done = [k for k in range(first, len(configs)) if results[k] is not None]
            if rc == 0 and len(done) == len(rest):
                break
            k_fail = next(k for k in range(first, len(configs)) if results[k] is None)
            results[k_fail] = Failed(why or last_error(log + "\n" + out))
            first = k_fail + 1
        return results

    def parse(self, log, work, results, configs):
        chunks = re.split(r"^EFBEGIN (\d+)$", log, flags=re.M)
        for k_str, chunk in zip(chunks[1::2], chunks[2::2]):
            k = int(k_str)
            m = re.search(r"^EFRES " + k_str + r" (.*)$", chunk, flags=re.M)
            if not m or results[k] is not None:
                continue
            vals = m.group(1).split()
            res = {key: float(v) for key, v in zip(RESULT_KEYS, vals)}
            res["log"], res["work"] = chunk, work
            if configs[k].get("forces"):
                dump = work / f"f{k}.dump"
                if not dump.exists():
                    continue
                rows = np.loadtxt(dump, skiprows=9, ndmin=2)
                res["pos"], res["forces"] = rows[:, 1:4], rows[:, 4:7]
            results[k] = res


def thermo_table(log, first_col="Step"):
    """Thermo rows of a log chunk, of every table with the first table's columns (the runs of
    one thermo_style): (columns, [rows, cols] array)."""
    rows, cols, on = [], None, False
    for line in log.splitlines():
        w = line.split()
        if w and w[0] == first_col:
            cols = cols or w
            on = w == cols
            continue
        if on:
            if not w or w[0] == "Loop" or len(w) != len(cols):
                on = False
                continue
            try:
                rows.append([float(v) for v in w])
            except ValueError:
                on = False
    return cols, np.array(rows)
