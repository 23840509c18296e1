"""The validation suite's shared state: the two potentials, sizes, lattice constants, result rows.

"model" is the edgeframe potential (pair_style edgeframe, the potential file); "reference" is
the classical potential its training data were made with (lmp.POTENTIALS). Every section runs
both on the same structures and turns the pairs of numbers into rows:
    dict(quantity, unit, model, reference, error, error_unit, target, pass, note)
where model / reference are floats or "failed: <reason>", error is model - reference (error_unit
the quantity's unit) or (model - reference) / |reference| (error_unit "%"), and pass is True,
False, or None (no target, or the reference itself failed).
"""
import json
import math
import pathlib
import struct
import time

import numpy as np

from lmp import A0_CLASSICAL, FORCE_RANGE_CLASSICAL, MASS, Failed, Runner

MODELS = ("model", "reference")
LATTICES = {"C": ["diamond"], "Cu": ["fcc", "bcc"]}
GROUND = {"C": "diamond", "Cu": "fcc"}
BAR_TO_GPA = 1e-4
EV_PER_A2_TO_J_PER_M2 = 16.02176634


def value(x):
    """float, or Failed for a Failed / NaN / inf."""
    if isinstance(x, Failed):
        return x
    try:
        x = float(x)
    except (TypeError, ValueError):
        return Failed(f"not a number: {x!r}")
    return x if math.isfinite(x) else Failed(f"non-finite value {x}")


def compare(quantity, unit, m, r, kind="rel", bound=None, note="", scale=1.0):
    """One row. kind 'rel': error (m - r) / |r| in %, pass |error| <= bound (a fraction);
    kind 'abs': error m - r in `unit`, pass |error| <= bound (in `unit`); bound None: no target.
    scale multiplies m and r (unit conversion) before anything else."""
    m, r = value(m), value(r)
    m = m * scale if not isinstance(m, Failed) else m
    r = r * scale if not isinstance(r, Failed) else r
    row = dict(quantity=quantity, unit=unit, model=m if not isinstance(m, Failed) else repr(m),
               reference=r if not isinstance(r, Failed) else repr(r), error=None,
               error_unit="%" if kind == "rel" else unit, target=None, note=note)
    if bound is not None:
        row["target"] = f"|error| <= {100 * bound:g} %" if kind == "rel" else \
            f"|error| <= {bound:g} {unit}"
    if isinstance(m, Failed) or isinstance(r, Failed):
        row["pass"] = False if (isinstance(m, Failed) and bound is not None and
                                not isinstance(r, Failed)) else None
        return row
    if kind == "rel":
        row["error"] = 100 * (m - r) / abs(r) if r != 0 else float("inf")
        ok = abs(m - r) <= bound * abs(r) if bound is not None else None
    else:
        row["error"] = m - r
        ok = abs(m - r) <= bound if bound is not None else None
    row["pass"] = ok
    return row


def deviation(quantity, unit, dev, bound, note=""):
    """A row for a measure of distance between the two potentials (not a value of each):
    shown in the error column, pass |dev| <= bound (None: no target)."""
    dev = value(dev)
    row = dict(quantity=quantity, unit=unit, model=None, reference=None,
               error=dev if not isinstance(dev, Failed) else repr(dev), error_unit=unit,
               target=None if bound is None else f"<= {bound:g} {unit}", note=note)
    row["pass"] = (None if bound is None else False if isinstance(dev, Failed)
                   else bool(abs(dev) <= bound))
    return row


def check(quantity, unit, m, r, test, target, note=""):
    """A row whose pass/fail is test(model value) (e.g. a convergence criterion); the reference
    is shown beside it and gets the same test in the note."""
    m, r = value(m), value(r)
    row = dict(quantity=quantity, unit=unit, model=m if not isinstance(m, Failed) else repr(m),
               reference=r if not isinstance(r, Failed) else repr(r), error=None,
               error_unit=unit, target=target, note=note)
    row["pass"] = False if isinstance(m, Failed) else bool(test(m))
    row["reference_pass"] = None if isinstance(r, Failed) else bool(test(r))
    if not isinstance(r, Failed):
        row["note"] = (note + "; " if note else "") + ("reference meets it" if test(r) else
                                                       "reference does not meet it")
    return row


class Suite:
    def __init__(self, element, potential, plugin, out, quick=False, precision="fp64",
                 lmp="lmp", timeout=600.0, self_check=False, phonon_supercell=None):
        self.element, self.quick, self.out = element, quick, pathlib.Path(out)
        self.potential, self.self_check, self.phonon_supercell = potential, self_check, phonon_supercell
        self.mass = MASS[element]
        self.runner = Runner(element, potential, plugin, precision, lmp, self.out / "lammps",
                             timeout_per_config=timeout, self_check=self_check)
        self.eos = {}           # (model, lattice) -> Birch-Murnaghan fit or Failed
        self.t0 = time.time()

    def say(self, msg):
        print(f"[{time.time() - self.t0:7.1f} s] {msg}", flush=True)

    def run(self, model, configs, tag, timeout=None):
        t = time.time()
        res = self.runner.run(model, configs, tag, timeout)
        bad = sum(isinstance(r, Failed) for r in res)
        self.say(f"  {tag}: {model} {len(configs)} configuration(s) in {time.time() - t:.1f} s"
                 + (f", {bad} failed ({next(r for r in res if isinstance(r, Failed))})" if bad else ""))
        return res

    def a_ref(self, lattice):
        return A0_CLASSICAL[(self.element, lattice)]

    def a0(self, model, lattice):
        """The potential's own lattice constant (Birch-Murnaghan fit of the eos section, run now
        if it has not run); the reference's tabulated one if the fit failed (noted)."""
        if (model, lattice) not in self.eos:
            import bulk_sections
            bulk_sections.eos_fit(self, model, lattice)
        fit = self.eos[(model, lattice)]
        if isinstance(fit, Failed):
            return self.a_ref(lattice), f"{model} E(V) fit failed, at the reference's a0"
        return fit["a0"], ""

    def force_range(self):
        """How far a force reaches (A): layers x r_cut of the edgeframe model (message passing),
        twice the cutoff of the classical potential; the larger of the two."""
        r = FORCE_RANGE_CLASSICAL[self.element]
        if not self.self_check:
            try:
                with open(self.potential, "rb") as f:
                    head = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
                model = json.loads(head["__metadata__"]["edgeframe"])["model"]
                r = max(r, model["layers"] * model["r_cut"])
            except (OSError, ValueError, KeyError, TypeError, struct.error):
                # not an edgeframe potential file: LAMMPS will say why; size by the reference
                pass
        return r

    def phonon_reps(self, lattice):
        """Conventional cells per side of the finite-displacement supercell: at full size the
        smallest whose edge holds twice the force range, so that no force constant reaches its own
        periodic image (a smaller cell folds the far force constants back and bends the acoustic
        branches near Gamma); --quick one cell less (at least 2); --phonon-supercell sets it."""
        if self.phonon_supercell:
            return self.phonon_supercell
        n = math.ceil(2 * self.force_range() / self.a_ref(lattice) - 1e-9)
        return max(2, n - 1) if self.quick else n

    def natoms_basis(self, lattice):
        return {"diamond": 8, "fcc": 4, "bcc": 2}[lattice]

    def size(self, full, quick):
        return quick if self.quick else full


def per_atom(res, key="pe"):
    if isinstance(res, Failed):
        return res
    return value(res[key] / res["atoms"])


def max_force(res):
    """Largest |F| over atoms (eV/A) from a result with forces, or Failed."""
    if isinstance(res, Failed):
        return res
    f = res["forces"]
    if not np.all(np.isfinite(f)):
        return Failed("non-finite forces")
    return float(np.sqrt((f ** 2).sum(1)).max())
