#!/usr/bin/env python3
"""Multi-scale gate (issue #7): PyTorch reference (eager, torch.compile), the edgeframe engine
(fp32, tf32) and edgeframe inside LAMMPS, side by side in ONE run on one GPU.

    python3 tools/gate.py --bench build-gpu/bench/edgeframe_bench --lmp lmp \
        --plugin build-gpu/src/lammps/edgeframeplugin.so --out gate-out --budget 420

For every case (system, target size, shape), in priority order until --budget seconds have
passed: build the rattled box and a random full-size model (tools/bench_reference.py's
recipe, seeds fixed), write the model as a potential file and the neighbour list as a case
file, compute fp64 reference forces (edge-chunked, so that large cases fit), then time each
column in a fresh process: reference eager and compile (tools/bench_reference.py's worker),
engine (bench/edgeframe_bench --case), LAMMPS (`-k on g 1 -sf kk`, static positions: one force
call per step; the per-step time from two runs of different length, run_lammps). Every column reports the median step time, atom-steps/s, ns/day at 1 fs, peak memory
and, for the engine, max |F - F_ref(fp64)|. Results go to OUT/gate.json (rewritten after
every column, so a run cut short keeps what it measured) and OUT/gate.md.
"""

import argparse
import json
import os
import pathlib
import re
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_reference  # noqa: E402  (the reference worker and its case recipe)

# Priority order: the named targets first, then the size sweep.
DEFAULT_CASES = [
    ("diamond", 512, "L2"), ("bcc", 4394, "L3"), ("diamond", 2000, "L2"), ("diamond", 4400, "L2"),
    ("diamond", 4096, "L3"), ("bcc", 512, "L3"), ("bcc", 2000, "L3"), ("diamond", 32000, "L2"),
]


def build_case(system, size, shape, workdir, reference=True, **overrides):
    """Potential file, case file, LAMMPS data file and fp64 reference forces of one case.
    reference=False skips the reference (for sizes where the PyTorch model would take longer
    than a call: the engine columns then report no force error).
    overrides: ModelConfig fields replacing the shape's (tests use small models)."""
    import torch
    from edgeframe_ref.neighbors import edge_vectors, neighbor_list
    from edgeframe_ref.potential_io import write_potential
    from edgeframe_ref.random_init import make_config, random_model
    from edgeframe_ref.structures import bcc, diamond, rattle, replicas_for

    reps = replicas_for(size, bench_reference.SYSTEMS[system])
    atoms = diamond(reps) if system == "diamond" else bcc(reps)
    atoms = rattle(atoms, 0.02, seed=1)
    model = random_model(make_config(shape, **overrides), seed=0, dtype=torch.float64, device="cpu")
    tag = f"{system}-{size}-{shape}"
    pot = workdir / f"{tag}.safetensors"
    write_potential(pot, model, dtype="float64", trained_precision="float64",
                    provenance={"data": "random weights (tools/gate.py)"})
    i, j, shift = neighbor_list(atoms.positions, atoms.cell, atoms.pbc, model.cfg.r_cut)
    cell = np.asarray(atoms.cell, dtype=np.float64)
    pos = np.asarray(atoms.positions, dtype=np.float64)
    species = np.array([model.cfg.species.index(s) for s in atoms.symbols], dtype=np.int32)
    shift_cart = shift.numpy().astype(np.float64) @ cell
    case = workdir / f"{tag}.case"
    with open(case, "wb") as fh:
        fh.write(b"EFCASE1\0" + struct.pack("<qq", len(pos), len(i)))
        fh.write(pos.astype("<f8").tobytes())
        fh.write(species.astype("<i4").tobytes())
        fh.write(i.numpy().astype("<i4").tobytes())
        fh.write(j.numpy().astype("<i4").tobytes())
        fh.write(shift_cart.astype("<f8").tobytes())
    # LAMMPS data file: the same atoms, one type per element of the model.
    data = workdir / f"{tag}.data"
    a, b, c = cell
    if abs(a[1]) + abs(a[2]) + abs(b[2]) > 1e-12:
        raise ValueError("gate boxes are built with lower-triangular cells")
    lines = [f"edgeframe gate {tag}", "", f"{len(pos)} atoms", f"{len(model.cfg.species)} atom types", "",
             f"0 {a[0]:.12f} xlo xhi", f"0 {b[1]:.12f} ylo yhi", f"0 {c[2]:.12f} zlo zhi",
             "", "Masses", ""]
    if abs(b[0]) + abs(c[0]) + abs(c[1]) > 1e-12:
        lines.insert(8, f"{b[0]:.12f} {c[0]:.12f} {c[1]:.12f} xy xz yz")
    lines += [f"{t + 1} {12.011 if s == 'C' else 63.546}" for t, s in enumerate(model.cfg.species)]
    lines += ["", "Atoms # atomic", ""]
    lines += [f"{k + 1} {species[k] + 1} {p[0]:.12f} {p[1]:.12f} {p[2]:.12f}" for k, p in enumerate(pos)]
    data.write_text("\n".join(lines) + "\n")
    base = dict(tag=tag, potential=pot, case=case, data=data, n_atoms=len(pos), n_edges=int(len(i)),
                elements=list(model.cfg.species))
    if not reference:
        return dict(base, ref=None, ref_fp32_max_force_err_rel=None)
    # fp64 reference forces on the GPU, edge-chunked (checkpointed) so that L3 cases fit.
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model = model.to(dev)
    model.requires_grad_(False)
    model.edge_chunk = 200_000
    pos_t = torch.as_tensor(pos, device=dev)
    vec = edge_vectors(pos_t, cell, i.to(dev), j.to(dev), shift.to(dev)).requires_grad_(True)
    energies = model(torch.as_tensor(species, dtype=torch.int64, device=dev), i.to(dev), j.to(dev), vec)
    (g,) = torch.autograd.grad(energies.sum(), vec)
    f = torch.zeros_like(pos_t).index_add_(0, i.to(dev), g).index_add_(0, j.to(dev), -g)
    ref = dict(energy=float(energies.detach().sum()), forces=f.cpu().numpy())
    # The reference's own fp32 error, so that the engine's fp32 error has a yardstick.
    model32 = model.float()
    vec32 = vec.detach().float().requires_grad_(True)
    e32 = model32(torch.as_tensor(species, dtype=torch.int64, device=dev), i.to(dev), j.to(dev), vec32)
    (g32,) = torch.autograd.grad(e32.sum(), vec32)
    f32 = torch.zeros_like(pos_t).index_add_(0, i.to(dev), g32.double()).index_add_(0, j.to(dev), -g32.double())
    ref["fp32_max_force_err_rel"] = float((f32 - f).abs().max() / f.abs().max())
    del model, model32, vec, vec32, energies, e32, g, g32, f, f32
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return dict(base, ref_fp32_max_force_err_rel=ref["fp32_max_force_err_rel"], ref=ref)


def run_engine(args, c, precision, activations="auto", bench=None, env=None, cuda_graph=False):
    tag = "" if activations == "auto" else f"-{activations}"
    forces = c["case"].with_suffix(f".{precision}{tag}{'-graph' if cuda_graph else ''}.forces")
    cmd = [bench or args.bench, "--case", str(c["case"]), "--potential", str(c["potential"]), "--precision", precision,
           "--reps", str(args.repeats), "--warmup", str(args.warmup), "--forces-out", str(forces),
           "--activations", activations]
    if activations == "recompute":    # every layer, in edge chunks of --edge-chunk edges (0: all at once)
        cmd += ["--edge-chunk", str(getattr(args, "edge_chunk", 0))]
    if activations == "auto" and getattr(args, "memory_budget", 0) > 0:    # else the device's free memory
        cmd += ["--memory-budget", str(args.memory_budget)]
    if cuda_graph:   # the step recorded once as a CUDA graph and replayed (EvaluatorOptions::cuda_graph)
        cmd += ["--cuda-graph"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.case_timeout, env=env)
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")), None)
    if line is None:
        return dict(error=f"exit {p.returncode}: {(p.stderr.strip().splitlines() or ['no output'])[-1][:300]}")
    try:
        r = json.loads(line[7:])
    except json.JSONDecodeError:    # a bench built before its error text was escaped for JSON
        return dict(error=f"exit {p.returncode}: {line[7:][:300]}")
    if "error" in r:
        return r
    f = np.fromfile(forces, dtype="<f8").reshape(-1, 3)
    r["forces_finite"] = bool(np.isfinite(f).all())
    if c["ref"] is None:    # --no-reference: no force error to report
        return r
    ref = c["ref"]["forces"]
    r["max_force_err"] = float(np.abs(f - ref).max())
    r["max_force_err_rel"] = r["max_force_err"] / float(np.abs(ref).max())
    r["energy_err"] = abs(r["energy"] - c["ref"]["energy"])
    return r


def run_lammps(args, c, precision, steps=50, graph=False):
    """graph: pair_style keywords graph per_rebuild and cuda_graph yes (the graph built once, the
    step replayed as a CUDA graph), with the neighbour skin of --lmp-skin.

    Timing: a warm-up run, then runs of `steps` and 3 x `steps` steps in one LAMMPS process. A
    run's Loop time may hold a cost paid once per run (with cuda_graph, a capture where the run's
    setup had to put the graph in new memory), so the per-step time is the difference of the two
    runs' Loop times over the difference of their steps (median_s), and the once-per-run cost is
    what the shorter run has beyond that (run_fixed_s). The engine column excludes its capture
    the same way (warm-up steps)."""
    species = c["elements"]
    inp = c["data"].with_suffix(".graph.in" if graph else ".in")
    style = f"precision {precision}" + (" graph per_rebuild cuda_graph yes" if graph else "")
    inp.write_text("\n".join([
        "units metal", "atom_style atomic", "atom_modify map array", "boundary p p p",
        *([f"neighbor {args.lmp_skin} bin"] if args.lmp_skin is not None else []),
        f"read_data {c['data']}", f"plugin load {args.plugin}",
        f"pair_style edgeframe {style}", f"pair_coeff * * {c['potential']} {' '.join(species)}",
        # Static positions (no integrator): every step is one force call on the case's atoms, as
        # in the engine column. Random-weight models are not physical: an NVE run of the 512-atom
        # L2 diamond pulled two atoms 0.29 A apart by step 57 (H200, 2026-11-30) and stopped.
        "thermo 50", "run 10", f"run {steps}", f"run {3 * steps}",
        # The forces of the last step, by atom ID (the case's atom order), for the force error.
        f"write_dump all custom {inp.with_suffix('.forces')} id fx fy fz modify sort id format float %.17g", ""]))
    cmd = [args.lmp, "-k", "on", *args.lmp_kokkos.split(), "-sf", "kk", "-pk", "kokkos", *args.lmp_package.replace(",", " ").split(),
           "-in", str(inp), "-log", str(inp.with_suffix(".log")), "-screen", "none"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.case_timeout)
    log = inp.with_suffix(".log").read_text() if inp.with_suffix(".log").exists() else ""
    loops = re.findall(r"Loop time of ([0-9.eE+-]+) on \d+ procs for (\d+) steps", log)
    if p.returncode != 0 or len(loops) < 3:
        # LAMMPS' own "ERROR..." line first: MPI's "with errorcode 1" after it says nothing.
        lines = (log + p.stdout + p.stderr).splitlines()
        err = [ln for ln in lines if "ERROR" in ln] or [ln for ln in lines if "rror" in ln]
        return dict(error=f"exit {p.returncode}: {(err or ['no Loop time in the log'])[0][:300]}")
    (t1, n1), (t2, n2) = [(float(t), int(n)) for t, n in loops[-2:]]
    per_step = (t2 - t1) / (n2 - n1)
    r = dict(median_s=per_step, times_s=[per_step], steps=n2 - n1, runs=[n1, n2], run_fixed_s=t1 - n1 * per_step,
             mean_s_short_run=t1 / n1,
             note=f"per step: (Loop time of {n2} steps - Loop time of {n1}) / {n2 - n1}; run_fixed_s: the "
                  f"{n1}-step run's Loop time beyond {n1} such steps (paid once per run)")
    replays = re.findall(r"edgeframe cuda_graph: (\d+) capture\(s\), (\d+) replayed step", log)
    if replays:   # the timed run's (the last one)
        r["cuda_graph_captures"], r["cuda_graph_replays"] = int(replays[-1][0]), int(replays[-1][1])
    edges = re.findall(r"edges ([0-9.]+) / [0-9]+\n", log)
    if edges:     # edges within r_cut per force call of the timed run
        r["lammps_edges"] = float(edges[-1])
    mem = re.search(r"edgeframe device memory on rank 0: peak (\d+) MiB", log)
    if mem:    # GPU builds: LibTorch's allocator peak + the Kokkos workspace (LAMMPS' own arrays not counted)
        r["peak_bytes"] = int(mem.group(1)) * 2 ** 20
    dump = inp.with_suffix(".forces")
    if dump.exists():
        rows = np.loadtxt(dump, skiprows=9, ndmin=2)
        f = rows[np.argsort(rows[:, 0]), 1:4]
        r["forces_finite"] = bool(np.isfinite(f).all())
        if c["ref"] is not None and f.shape == c["ref"]["forces"].shape:
            ref = c["ref"]["forces"]
            r["max_force_err"] = float(np.abs(f - ref).max())
            r["max_force_err_rel"] = r["max_force_err"] / float(np.abs(ref).max())
    return r


def finish_row(r, n_atoms):
    if r.get("median_s"):
        r["atom_steps_per_s"] = n_atoms / r["median_s"]
        r["ns_per_day"] = 86400.0 / r["median_s"] * 1e-6   # 1 fs steps: 1e6 steps per ns
    return r


def markdown(results):
    out = ["| case | atoms | edges | column | median ms | atom-steps/s | ns/day (1 fs) | peak MiB | max abs dF eV/A (rel) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        column = r["column"]
        if column.startswith("lammps-") and "cuda_graph_replays" in r:   # -graph: its edges and replays
            column += f" ({r.get('lammps_edges', 0):.0f} edges, {r['cuda_graph_replays']} replays)"
        if column.startswith("lammps-") and "run_fixed_s" in r:   # what each run pays once (a capture)
            column += f" [+{1e3 * r['run_fixed_s']:.1f} ms once per run]"
        head = f"| {r['tag']} | {r['n_atoms']} | {r['n_edges']} | {column} |"
        if r.get("error"):
            out.append(f"{head} failed: {r['error'][:100]} | | | | |")
            continue
        peak = f"{r['peak_bytes'] / 2 ** 20:.0f}" if r.get("peak_bytes") else "-"
        err = (f"{r['max_force_err']:.1e} ({r['max_force_err_rel']:.1e})" if "max_force_err" in r else "-")
        out.append(f"{head} {1e3 * r['median_s']:.2f} | {r['atom_steps_per_s']:.3g} | {r['ns_per_day']:.3g} | "
                   f"{peak} | {err} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", required=True, help="bench/edgeframe_bench of a CUDA build")
    ap.add_argument("--bench-b", default="",
                    help="a second edgeframe_bench (another version of the code) for the engine-b-<precision>[-recompute] "
                         "columns: an A/B of two builds against the same reference forces, in one run")
    ap.add_argument("--bench-b-env", action="append", default=[], metavar="NAME=VALUE",
                    help="environment of the engine-b columns (repeatable); without --bench-b they run --bench: "
                         "an A/B of one build under two environments (a temporary switch under measurement)")
    ap.add_argument("--lmp", default="", help="lmp with KOKKOS CUDA (empty: no LAMMPS column)")
    ap.add_argument("--plugin", default="", help="edgeframeplugin.so built for that lmp")
    ap.add_argument("--lmp-package", default="neigh full newton off",
                    help="package kokkos options of the LAMMPS column, spaces or commas (default: LAMMPS-KOKKOS' GPU defaults)")
    ap.add_argument("--lmp-skin", type=float, default=None,
                    help="neighbour skin of the LAMMPS columns, A (default: LAMMPS' metal default of 2 A); the "
                         "-graph columns keep the pairs within r_cut + skin from rebuild to rebuild and "
                         "evaluate those within r_cut")
    ap.add_argument("--lmp-kokkos", default="g 1",
                    help="what follows '-k on' in the LAMMPS column (default: one GPU; tests use 't 1')")
    ap.add_argument("--cases", default="", help="system:size:shape,... (default: the issue's list)")
    ap.add_argument("--columns", default="eager,compile,engine-fp32,engine-tf32,lammps-fp32",
                    help="eager, compile, compile-tf32 (TF32 GEMMs on), engine-<precision>[-keep|-recompute][-graph], "
                         "engine-b-<precision>[...] (--bench-b), lammps-<precision>[-graph]; engine columns run with "
                         "activations auto unless -keep or -recompute is named; -graph: the step "
                         "replayed as a CUDA graph (bench --cuda-graph; lammps: pair_style graph per_rebuild cuda_graph yes)")
    ap.add_argument("--edge-chunk", type=int, default=0,
                    help="edges per recomputed chunk in the engine-<precision>-recompute columns (0: all)")
    ap.add_argument("--memory-budget", type=float, default=0,
                    help="GB (1e9 bytes) for the engine columns with activations auto (0: the device's free memory)")
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the PyTorch fp64 reference forces (very large cases): no force error column")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=float, default=420, help="stop starting new columns after this (s)")
    ap.add_argument("--case-timeout", type=float, default=240)
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("gate-out"))
    args = ap.parse_args()
    bad = [kv for kv in args.bench_b_env if "=" not in kv or kv.startswith("=")]
    if bad:
        ap.error(f"--bench-b-env wants NAME=VALUE, got {bad[0]!r}")
    env_b = dict(os.environ, **dict(kv.split("=", 1) for kv in args.bench_b_env)) if args.bench_b_env else None
    bench_b = args.bench_b or (args.bench if env_b else "")
    import torch
    cases = ([tuple(x.split(":")) for x in args.cases.split(",")] if args.cases else DEFAULT_CASES)
    cases = [(s, int(n), sh) for s, n, sh in cases]
    args.out.mkdir(parents=True, exist_ok=True)
    env = dict(torch=torch.__version__, bench_b_env=args.bench_b_env, gpu=torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
               command=" ".join(sys.argv), started=time.strftime("%Y-%m-%d %H:%M:%S"))
    results, t_start = [], time.monotonic()
    work = pathlib.Path(tempfile.mkdtemp(prefix="gate-"))

    def save():
        (args.out / "gate.json").write_text(json.dumps(dict(env=env, results=results), indent=1))
        (args.out / "gate.md").write_text(markdown(results) + "\n")

    for system, size, shape in cases:
        if time.monotonic() - t_start > args.budget:
            print(f"gate: budget of {args.budget:.0f} s spent; stopping before {system} {size} {shape}", flush=True)
            break
        t0 = time.monotonic()
        try:
            c = build_case(system, size, shape, work, reference=not args.no_reference)
        except Exception as err:   # e.g. the fp64 reference does not fit
            results.append(dict(tag=f"{system}-{size}-{shape}", n_atoms=size, n_edges=0, column="setup",
                                error=f"{type(err).__name__}: {err}"[:300]))
            save()
            continue
        ref_note = ("no reference (--no-reference)" if c["ref"] is None else
                    f"reference fp32 vs fp64: max |dF| / max |F| = {c['ref_fp32_max_force_err_rel']:.1e}")
        print(f"gate: {c['tag']}: {c['n_atoms']} atoms, {c['n_edges']} edges, set up in "
              f"{time.monotonic() - t0:.1f} s; {ref_note}", flush=True)
        for col in args.columns.split(","):
            if time.monotonic() - t_start > args.budget:
                break
            t0 = time.monotonic()
            try:
                if col in ("eager", "compile", "compile-tf32"):
                    case = dict(system=system, size=size, shape=shape, mode=col.split("-")[0], tf32=col.endswith("tf32"),
                                device="cuda", dtype="float32",
                                repeats=args.repeats, warmup=args.warmup, threads=0, edge_chunk=0, max_memory_gb=0)
                    r = bench_reference.run_worker(case, args.case_timeout)
                    r = {k: r[k] for k in ("median_s", "times_s", "peak_bytes", "first_call_s", "error") if k in r}
                elif col.startswith("engine-") and (bench_b or not col.startswith("engine-b-")):
                    # engine[-b]-<precision>[-recompute|-graph]; engine-b: the second bench / environment
                    b_col = col.startswith("engine-b-")
                    precision, *flags = col.split("-")[2 if b_col else 1:]
                    activations = "recompute" if "recompute" in flags else "keep" if "keep" in flags else "auto"
                    r = run_engine(args, c, precision, activations=activations, cuda_graph="graph" in flags,
                                   bench=bench_b if b_col else None, env=env_b if b_col else None)
                elif col.startswith("lammps-") and args.lmp:
                    precision, *flags = col.split("-")[1:]
                    r = run_lammps(args, c, precision, graph="graph" in flags)
                else:
                    continue
            except subprocess.TimeoutExpired:
                r = dict(error=f"timed out after {args.case_timeout:.0f} s")
            r = finish_row(dict(r, tag=c["tag"], n_atoms=c["n_atoms"], n_edges=c["n_edges"], column=col,
                                ref_fp32_max_force_err_rel=c["ref_fp32_max_force_err_rel"]),
                           c["n_atoms"])
            results.append(r)
            save()
            what = r.get("error") or f"{1e3 * r['median_s']:.2f} ms/step"
            print(f"gate:   {col:12s} {what}  ({time.monotonic() - t0:.0f} s)", flush=True)
    save()
    print(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
