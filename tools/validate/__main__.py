"""Validation suite: every test in LAMMPS with the edgeframe potential and with the classical
potential its data were made with, on the same structures; writes <out>/report.md (one table per
section), <out>/results.json and PNG plots. Method and targets: doc/validation.md.

    source $(scripts/bootstrap.sh --print-env)
    $EDGEFRAME_PYTHON tools/validate --element C --potential potentials/C-diamond-v2.safetensors \\
        --out validate-C [--sections eos phonons] [--quick]
"""
import argparse
import hashlib
import os
import pathlib
import shlex
import shutil
import sys
import time
import traceback

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import bulk_sections  # noqa: E402
import defect_sections  # noqa: E402
import dynamics_sections  # noqa: E402
import report  # noqa: E402
from lmp import DEFAULT_PLUGIN, POTENTIALS  # noqa: E402
from report import counts  # noqa: E402
from suite import Suite  # noqa: E402

SECTIONS = {"eos": bulk_sections.eos, "elastic": bulk_sections.elastic,
            "phonons": bulk_sections.phonons, "vacancy": defect_sections.vacancy,
            "surfaces": defect_sections.surfaces, "stacking_fault": defect_sections.stacking_fault,
            "isolated_atom": bulk_sections.isolated_atom, "rattle": dynamics_sections.rattle,
            "minimize": dynamics_sections.minimize, "nve": dynamics_sections.nve,
            "liquid": dynamics_sections.liquid}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="tools/validate", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--element", required=True, choices=sorted(POTENTIALS))
    ap.add_argument("--potential", required=True, type=pathlib.Path)
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--sections", nargs="+", default=list(SECTIONS), choices=list(SECTIONS),
                    metavar="SECTION", help="any of: " + " ".join(SECTIONS) + " (default: all)")
    ap.add_argument("--quick", action="store_true", help="smaller boxes, fewer points and steps")
    ap.add_argument("--plugin", default=str(DEFAULT_PLUGIN), type=pathlib.Path)
    ap.add_argument("--precision", default="fp64")
    ap.add_argument("--lmp", default="lmp", help="LAMMPS executable (default: lmp on PATH)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds allowed per configuration (a minimisation, an MD run)")
    ap.add_argument("--keep-lammps", action="store_true", help="keep <out>/lammps (inputs, logs)")
    ap.add_argument("--self-check", action="store_true",
                    help="run the reference potential as the model too (every error must be 0)")
    ap.add_argument("--strict", action="store_true", help="exit status 1 if any row fails")
    ap.add_argument("--phonon-supercell", type=int, metavar="N",
                    help="conventional cells per side of the phonon supercell (default: twice the "
                         "longer force range of the two potentials; doc/validation.md)")
    args = ap.parse_args(argv)

    if "LAMMPS_POTENTIALS" not in os.environ:
        ap.error("LAMMPS_POTENTIALS is not set: source $(scripts/bootstrap.sh --print-env)")
    if shutil.which(args.lmp) is None:
        ap.error(f"LAMMPS executable '{args.lmp}' not found (--lmp, or lmp on PATH)")
    needed = [("--potential", args.potential)] + ([] if args.self_check else [("--plugin", args.plugin)])
    for what, path in needed:
        if not path.exists():
            ap.error(f"{what} {path} does not exist")
    args.out.mkdir(parents=True, exist_ok=True)
    suite = Suite(args.element, args.potential, args.plugin, args.out, args.quick, args.precision,
                  args.lmp, args.timeout, args.self_check, args.phonon_supercell)
    pot = POTENTIALS[args.element]
    meta = dict(element=args.element, potential=str(args.potential), precision=args.precision,
                sha256=hashlib.sha256(args.potential.read_bytes()).hexdigest(),
                plugin=str(args.plugin), quick=args.quick, self_check=args.self_check,
                reference=f"pair_style {pot['style']}, {pot['file']} ({pot['element']})",
                command="$EDGEFRAME_PYTHON tools/validate " + " ".join(
                    shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])))
    results = {}
    for name in [n for n in SECTIONS if n in args.sections]:
        t = time.time()
        suite.say(f"== {name} ==")
        try:
            sec = SECTIONS[name](suite)
        except Exception:                     # a bug of the suite: keep the other sections
            sec = dict(error=traceback.format_exc(), rows=[])
        sec["seconds"] = time.time() - t
        results[name] = sec
        ok, n = counts(sec.get("rows", []))
        suite.say(f"{name}: {'section failed' if 'error' in sec else f'{ok} / {n} passed'} "
                  f"in {sec['seconds']:.1f} s")
        report.write(args.out, meta, results)
    if not args.keep_lammps:
        shutil.rmtree(args.out / "lammps", ignore_errors=True)
    ok = sum(counts(s.get("rows", []))[0] for s in results.values())
    n = sum(counts(s.get("rows", []))[1] for s in results.values())
    suite.say(f"done: {ok} / {n} passed; {args.out / 'report.md'}")
    errors = any("error" in s for s in results.values())
    return 1 if (args.strict and (ok < n or errors)) else 0


if __name__ == "__main__":
    sys.exit(main())
