#!/usr/bin/env python3
"""Baseline timings of the PyTorch reference: energy + forces, eager and torch.compile.

    python tools/bench_reference.py --device cpu --sizes 512 --repeats 3
    python tools/bench_reference.py --device cuda                   # full table on a GPU

For every (system, size, shape, mode) a fresh worker process builds the box (diamond C or bcc
Cu, replicated to about --sizes atoms, rattled 0.02 A), a random-weight model of the shape
(DESIGN.md §2: L2 / L3 at full size, C = 128, T = 4) and the neighbour list (timed apart: it is
rebuilt only every few steps in MD), then times a step = edge vectors from positions, forward,
one backward for the forces. Reported: median step time over --repeats after --warmup steps,
atom-steps/s, edges per atom, peak memory (CUDA: max_memory_allocated; CPU: peak RSS of the
worker process), and for compile the time of the first (compiling) call. A worker that fails
(out of memory, compiler error, timeout) reports why and the table says so. On a CPU a
watchdog kills a worker whose resident memory passes --max-memory-gb, so that a case too large
for the machine fails cleanly instead of calling the kernel's OOM killer on a shared host;
--edge-chunk trades time for memory (recompute in backward).
"""

import argparse
import json
import os
import pathlib
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SYSTEMS = {"diamond": 8, "bcc": 2}      # atoms per cubic cell


# ------------------------------------------------------------------------------ worker
def run_case(case):
    import torch
    from edgeframe_ref.neighbors import edge_vectors, neighbor_list
    from edgeframe_ref.random_init import make_config, random_model
    from edgeframe_ref.structures import bcc, diamond, rattle, replicas_for

    if case["threads"]:
        torch.set_num_threads(case["threads"])
    device = torch.device(case["device"])
    dtype = getattr(torch, case["dtype"])
    reps = replicas_for(case["size"], SYSTEMS[case["system"]])
    atoms = diamond(reps) if case["system"] == "diamond" else bcc(reps)
    atoms = rattle(atoms, 0.02, seed=1)
    model = random_model(make_config(case["shape"]), seed=0, dtype=dtype, device=device)
    model.requires_grad_(False)
    model.edge_chunk = case["edge_chunk"]

    t0 = time.perf_counter()
    i, j, shift = neighbor_list(atoms.positions, atoms.cell, atoms.pbc, model.cfg.r_cut)
    t_nl = time.perf_counter() - t0
    i, j, shift = i.to(device), j.to(device), shift.to(device)
    species = torch.tensor([model.cfg.species.index(s) for s in atoms.symbols], device=device)
    pos = torch.as_tensor(atoms.positions, dtype=torch.float64, device=device)
    cell = torch.as_tensor(atoms.cell, dtype=torch.float64, device=device)

    # TF32 tensor-core GEMMs only where asked (the gate's compile-tf32 column, issue #7's
    # "with TF32 on" comparison); plain fp32 everywhere else.
    torch.backends.cuda.matmul.allow_tf32 = bool(case.get("tf32", False))
    torch.backends.cudnn.allow_tf32 = bool(case.get("tf32", False))
    forward = model
    if case["mode"] == "compile":
        forward = torch.compile(model, dynamic=False)

    def step():
        vec64 = edge_vectors(pos, cell, i, j, shift)
        vec = vec64.to(dtype).requires_grad_(True)
        energies = forward(species, i, j, vec)
        (g,) = torch.autograd.grad(energies.sum(), vec)
        g = g.to(torch.float64)
        forces = torch.zeros_like(pos).index_add_(0, i, g).index_add_(0, j, -g)
        return energies.double().sum(), forces

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    first = None
    for w in range(case["warmup"]):
        t0 = time.perf_counter()
        energy, forces = step()
        sync()
        if w == 0:
            first = time.perf_counter() - t0
    times = []
    for _ in range(case["repeats"]):
        t0 = time.perf_counter()
        energy, forces = step()
        sync()
        times.append(time.perf_counter() - t0)
    if device.type == "cuda":
        peak = torch.cuda.max_memory_allocated(device)
        peak_kind = "cuda max_memory_allocated"
    else:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        peak_kind = "peak RSS of worker"
    med = statistics.median(times)
    return dict(case, n_atoms=len(atoms), replicas=list(reps), n_edges=int(i.numel()),
                edges_per_atom=i.numel() / len(atoms), neighbor_s=t_nl, first_call_s=first,
                times_s=times, median_s=med, atom_steps_per_s=len(atoms) / med,
                peak_bytes=int(peak), peak_kind=peak_kind, energy=float(energy),
                max_force=float(forces.abs().max()), load_avg_1_5_15=os.getloadavg(),
                error=None)


def worker_main(spec):
    case = json.loads(spec)
    try:
        out = run_case(case)
    except Exception as err:   # report, never hang the driver
        msg = f"{type(err).__name__}: {err}".strip().splitlines()
        out = dict(case, error=" ".join(msg)[:400])
    print("RESULT " + json.dumps(out), flush=True)


# ------------------------------------------------------------------------------ driver
def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(int(ln.split()[1]) * 1024 for ln in fh if ln.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


def run_worker(case, timeout):
    """Run one case in a fresh process. With a memory budget (CPU), a watchdog polls the
    worker's resident memory and kills it past the budget, so that a case too large for a
    shared machine fails cleanly instead of calling the kernel's OOM killer on everyone."""
    budget = case["max_memory_gb"] * 2 ** 30
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(case)],
                                stdout=out, stderr=err, text=True)
        t0, seen, over = time.monotonic(), 0, False
        try:
            while proc.poll() is None:
                seen = max(seen, rss_bytes(proc.pid))
                if budget and seen > budget:
                    over = True
                    proc.kill()
                elif time.monotonic() - t0 > timeout:
                    proc.kill()
                    proc.wait()
                    raise subprocess.TimeoutExpired(proc.args, timeout)
                time.sleep(0.1)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        out.seek(0)
        err.seek(0)
        lines = [ln for ln in out.read().splitlines() if ln.startswith("RESULT ")]
        if over:
            return dict(case, error=f"out of memory: resident memory passed the budget of "
                                    f"{case['max_memory_gb']} GB (--max-memory-gb); killed")
        if lines:
            return json.loads(lines[-1][7:])
        tail = (err.read().strip().splitlines() or ["no output"])[-1]
        return dict(case, error=f"worker exited with status {proc.returncode}: {tail}"[:400])


def fmt_row(r):
    head = f"{r['system']:8s} {r['size']:>5d} {r['shape']:4s} {r['mode']:8s}"
    if r.get("error"):
        return f"{head} FAILED: {r['error']}"
    first = f"{r['first_call_s']:8.2f}" if r.get("first_call_s") is not None else "       -"
    return (f"{head} {r['n_atoms']:>6d} {r['edges_per_atom']:7.1f} {r['median_s'] * 1e3:11.1f} "
            f"{r['atom_steps_per_s']:12.1f} {r['peak_bytes'] / 2 ** 20:10.0f} {first}")


HEADER = (f"{'system':8s} {'size':>5s} {'shp':4s} {'mode':8s} {'atoms':>6s} {'edge/at':>7s} "
          f"{'median ms':>11s} {'atom-step/s':>12s} {'peak MiB':>10s} {'1st call s':>8s}")


def markdown(paths):
    """Markdown table of one or more result files (--markdown)."""
    out = ["| system | atoms | shape | mode | edge chunk | edges/atom | median step ms "
           "(min-max) | atom-steps/s | peak MiB | first call s | load avg |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for path in paths:
        for r in json.loads(pathlib.Path(path).read_text())["results"]:
            head = (f"| {r['system']} | {r.get('n_atoms', '~%d' % r['size'])} | {r['shape']} | "
                    f"{r['mode']} | {r.get('edge_chunk') or 'off'} |")
            if r.get("error"):
                why = r["error"]
                if "can't allocate memory" in why or why.startswith("out of memory"):
                    why = f"out of memory (budget {r['max_memory_gb']} GB)"
                elif "CUDA out of memory" in why:
                    why = "out of GPU memory"
                out.append(f"{head} | failed: {why[:120]} | | | | |")
                continue
            load = r.get("load_avg_1_5_15")
            ms = [1e3 * t for t in r["times_s"]]
            out.append(f"{head} {r['edges_per_atom']:.1f} | {1e3 * r['median_s']:.1f} "
                       f"({min(ms):.1f}-{max(ms):.1f}) | "
                       f"{r['atom_steps_per_s']:.1f} | {r['peak_bytes'] / 2 ** 20:.0f} | "
                       f"{r['first_call_s']:.1f} | {f'{load[0]:.1f}' if load else '-'} |")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--systems", default="diamond,bcc")
    ap.add_argument("--sizes", default="500,2000,4400", help="target atom counts")
    ap.add_argument("--shapes", default="L2,L3")
    ap.add_argument("--modes", default="eager,compile")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2, help="untimed steps first (>= 1)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    ap.add_argument("--edge-chunk", type=int, default=0,
                    help="run each layer's edge work in checkpointed chunks of this many edges "
                         "(recomputed in backward: less memory, more time; 0: off)")
    ap.add_argument("--max-memory-gb", type=float, default=None,
                    help="CPU only: kill a worker whose resident memory passes this (default: "
                         "half of MemAvailable at start; 0: no limit)")
    ap.add_argument("--case-timeout", type=float, default=3600, help="seconds per case")
    ap.add_argument("--out", type=pathlib.Path, default=pathlib.Path("bench_reference.json"))
    ap.add_argument("--markdown", nargs="+", metavar="JSON",
                    help="print a markdown table of earlier result files and exit")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_main(args.worker)
    if args.markdown:
        print(markdown(args.markdown))
        return 0

    import signal
    import torch

    def on_term(signum, frame):   # so that subprocess.run kills the running worker
        raise SystemExit(f"terminated by signal {signum}")
    signal.signal(signal.SIGTERM, on_term)
    max_mem = args.max_memory_gb
    if max_mem is None:
        max_mem = 0.0
        if not args.device.startswith("cuda"):
            avail = next(int(ln.split()[1]) for ln in open("/proc/meminfo")
                         if ln.startswith("MemAvailable:"))
            max_mem = round(0.5 * avail / 2 ** 20, 1)
    cases = [dict(system=s, size=int(n), shape=sh, mode=m, device=args.device,
                  dtype=args.dtype, repeats=args.repeats, warmup=max(1, args.warmup),
                  threads=args.threads, edge_chunk=args.edge_chunk, max_memory_gb=max_mem)
             for s in args.systems.split(",") for n in args.sizes.split(",")
             for sh in args.shapes.split(",") for m in args.modes.split(",")]
    env = {"python": sys.version.split()[0], "torch": torch.__version__,
           "platform": platform.platform(), "cpu_count": os.cpu_count(),
           "torch_threads": args.threads or torch.get_num_threads(),
           "cuda_device": (torch.cuda.get_device_name(torch.device(args.device))
                           if args.device.startswith("cuda") and torch.cuda.is_available()
                           else None),
           "command": " ".join([pathlib.Path(sys.argv[0]).as_posix()] + sys.argv[1:])}
    print(f"edgeframe reference benchmark: {len(cases)} cases on {args.device} "
          f"({env['cuda_device'] or platform.processor() or 'cpu'}), {args.dtype}, "
          f"torch {torch.__version__}, edge chunk {args.edge_chunk or 'off'}, "
          f"worker memory cap {max_mem or 'none'} GB", flush=True)
    print(HEADER, flush=True)
    results = []
    for k, case in enumerate(cases):
        label = f"[{k + 1}/{len(cases)}] {case['system']} {case['size']} {case['shape']} " \
                f"{case['mode']}"
        print(f"  ... {label}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        try:
            r = run_worker(case, args.case_timeout)
        except subprocess.TimeoutExpired:
            r = dict(case, error=f"timeout after {args.case_timeout:.0f} s")
        r["wall_s"] = time.perf_counter() - t0
        results.append(r)
        print(fmt_row(r), flush=True)
        args.out.write_text(json.dumps({"env": env, "results": results}, indent=1) + "\n")
    print(f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
