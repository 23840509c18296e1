#!/usr/bin/env python3
"""How an edgeframe step scales over ranks: the per-layer exchange's bytes per rank against the
link's bandwidth, next to the compute time per rank (issue 28 item 4, doc/performance.md
"A model of the exchange on many GPUs").

The geometry is a continuum one. A rank owns a box a_x x a_y x a_z of atoms at number density
rho; with the exchange, its ghost nodes are the atoms within r_g = r_cut + skin of the box, the
Minkowski shell V(r_g) = 2 r_g (a_x a_y + a_y a_z + a_z a_x) + pi r_g^2 (a_x + a_y + a_z)
+ 4/3 pi r_g^3. Along a direction with one rank the two faces hold periodic images of the rank's
own atoms, copied on the device without crossing a link; along a direction with two or more ranks
both faces come from other ranks. Every force call moves, per exchanged layer (T - 1 of T), the
ghost rows forward and their gradients back: 2 (T - 1) exchanges of n_cross x D x C x bytes.

    t_exchange = 2 (T - 1) (t_fixed + bytes_cross / bandwidth)
    t_compute  = atoms per rank x cost per atom-step (one GPU, measured) x (1 + ghost nodes /
                 owned nodes x ghost_cost)       ghost nodes carry node work but no edges

bandwidth is the rate at which an exchange moves those rows: --check shows that on one node the
measured exchanges reached 8-12 GB/s per rank with CUDA IPC (row reordering, handshakes and
waiting, not NVLink's 450 GB/s, set it), so the default is 10 GB/s; across nodes the smaller of
that and the network's rate per GPU applies. t_fixed adds a latency per exchange. Nothing here
overlaps the exchange with compute.

    python3 tools/scaling_model.py --check        # against the two-H200 figures in doc/performance.md
    python3 tools/scaling_model.py --model uma-s --lattice diamond --atoms 1000000 --grids 1,2,4,8
    python3 tools/scaling_model.py --model uma-s --lattice bcc-cu --atoms 250000 --weak --grids 1,2,8,64,512
"""
import argparse
import math

# Number densities (atoms / A^3): diamond a = 3.567 A, 8 atoms per cell; bcc Cu a = 2.87 A, 2 atoms.
DENSITY = {"diamond": 8 / 3.567 ** 3, "bcc-cu": 2 / 2.87 ** 3, "fcc-cu": 4 / 3.615 ** 3}

# Model shapes: lmax (D = (lmax + 1)^2 rows of C channels), C, layers T, r_cut (A), bytes per value,
# and the one-H200 tf32 cost per atom-step (ms) measured for that shape (doc/performance.md).
MODELS = {
    # The shipped carbon v1 potential of the two-GPU runs: fp32, 100.4 ms for 32 768 atoms.
    "c-v1": dict(lmax=2, channels=64, layers=2, r_cut=3.5, value_bytes=4, ms_per_atom=100.4 / 32768),
    # UMA-S converted: tf32 (fp32 rows), 215.2 ms for diamond 4096 (the UMA gate).
    "uma-s": dict(lmax=2, channels=128, layers=4, r_cut=6.0, value_bytes=4, ms_per_atom=215.2 / 4096),
}

# The two-H200 runs (bench/results/h200_2026-11-30g, exchange-ab-call4.md): carbon v1, fp32,
# skin 1 A, ghost_mode exchange, 2 ranks. Feature exchange per force call, ms (mean over ranks),
# ghost nodes per rank, and the step (ms) on 1 and 2 GPUs.
MEASURED = [
    dict(case="strong 32 768", cells=(16, 16, 16), grid=(2, 1, 1), ghost_nodes=10284.5,
         exchange_ms={"cuda-ipc": 3.001, "mpi": 11.3}, step_1gpu=100.4, step_2gpu={"cuda-ipc": 62.2, "mpi": 70.0}),
    dict(case="strong 110 592", cells=(24, 24, 24), grid=(2, 1, 1), ghost_nodes=22315.5,
         exchange_ms={"cuda-ipc": 8.473, "mpi": 27.47}, step_1gpu=360.3, step_2gpu={"cuda-ipc": 190.2, "mpi": 211.0}),
    dict(case="weak 2 x 32 768", cells=(16, 16, 32), grid=(1, 1, 2), ghost_nodes=15092.0,
         exchange_ms={"cuda-ipc": 2.665, "mpi": 12.63}, step_1gpu=100.4, step_2gpu={"cuda-ipc": 108.1, "mpi": 120.9}),
]


def minkowski_shell(sides, r):
    """Volume within r of a box of the given sides (1, 2 or 3 of them), outside it."""
    if len(sides) == 0:
        return 0.0
    if len(sides) == 1:
        return 2 * r
    if len(sides) == 2:
        a, b = sides
        return 2 * r * (a + b) + math.pi * r * r
    ax, ay, az = sides
    return 2 * r * (ax * ay + ay * az + az * ax) + math.pi * r * r * (ax + ay + az) + 4 / 3 * math.pi * r ** 3


def ghost_volumes(a, r, grid):
    """(all ghost nodes, those across ranks) as volumes. One rank folds its periodic images onto its
    own atoms: no ghosts. Otherwise a ghost whose coordinates along every split direction lie
    inside the box is a periodic image of the rank's own atom (copied on the device); every other
    one lives on another rank."""
    if all(g == 1 for g in grid):
        return 0.0, 0.0
    split = [d for d in range(3) if grid[d] > 1]
    unsplit = [a[d] for d in range(3) if grid[d] == 1]
    total = minkowski_shell(a, r)
    own = math.prod(a[d] for d in split) * minkowski_shell(unsplit, r)
    return total, total - own


# A ghost node's share of an owned node's work (node passes, no edges), fitted: the strong
# 32 768-atom two-GPU split (56.7 ms of compute per rank against 50.2 for half the one-GPU step,
# with 0.63 ghost nodes per owned node) gives about 0.2. The fit also absorbs the per-rank costs
# that do not shrink with the atoms per rank (launches, the graph build).
GHOST_COST = 0.2


def rank_figures(model, rho, box, grid, skin, bandwidth_gbs, t_fixed_ms, ghost_cost=GHOST_COST):
    a = [box[d] / grid[d] for d in range(3)]
    r_g = model["r_cut"] + skin
    owned = rho * a[0] * a[1] * a[2]
    v_ghost, v_cross = ghost_volumes(a, r_g, grid)
    ghosts, cross = rho * v_ghost, rho * v_cross
    row = (model["lmax"] + 1) ** 2 * model["channels"] * model["value_bytes"]
    exchanges = 2 * (model["layers"] - 1)
    bytes_cross = cross * row
    t_bw = bytes_cross / (bandwidth_gbs * 1e9) * 1e3 if bandwidth_gbs > 0 else 0.0
    t_exchange = exchanges * (t_fixed_ms + t_bw) if cross > 0 else 0.0
    t_compute = (owned + ghost_cost * ghosts) * model["ms_per_atom"]    # one rank: no ghosts (folded)
    return dict(owned=owned, ghosts=ghosts, cross=cross, exchanges=exchanges, mb_per_exchange=bytes_cross / 1e6,
                t_exchange=t_exchange, t_compute=t_compute)


def check(args):
    model = MODELS["c-v1"]
    rho = DENSITY["diamond"]
    skin = 1.0
    print("Two H200s, carbon v1 (fp32, skin 1 A, 2 exchanges per force call): the model's geometry against the")
    print("logs, and the rate at which the measured exchanges moved the rows that cross ranks.\n")
    print("| case | ghost nodes per rank: model / measured | MB per exchange across ranks | exchange ms per force "
          "call, measured (CUDA IPC / MPI) | effective GB/s per rank (CUDA IPC / MPI) |")
    print("|---|---|---|---|---|")
    for m in MEASURED:
        box = [c * 3.567 for c in m["cells"]]
        f = rank_figures(model, rho, box, m["grid"], skin, 0, 0)
        rate = {k: f["mb_per_exchange"] / (m["exchange_ms"][k] / f["exchanges"]) for k in m["exchange_ms"]}
        print(f"| {m['case']} | {f['ghosts']:.0f} / {m['ghost_nodes']:.0f} ({f['ghosts'] / m['ghost_nodes']:.2f}x) | "
              f"{f['mb_per_exchange']:.1f} | {m['exchange_ms']['cuda-ipc']:.2f} / {m['exchange_ms']['mpi']:.2f} | "
              f"{rate['cuda-ipc']:.1f} / {rate['mpi']:.1f} |")
    print(f"\nThe two-GPU step predicted from the one-GPU step (rows moved at {args.bandwidth} GB/s, {args.t_fixed} ms "
          f"fixed per exchange, a ghost node costing {GHOST_COST} of an owned one):\n")
    print("| case | 1 GPU, ms | 2 GPUs measured, ms | model, ms | measured speed-up or weak efficiency | model |")
    print("|---|---|---|---|---|---|")
    for m in MEASURED:
        box = [c * 3.567 for c in m["cells"]]
        weak = m["case"].startswith("weak")
        atoms_1gpu = rho * box[0] * box[1] * box[2] / (2 if weak else 1)
        per_atom = dict(model, ms_per_atom=m["step_1gpu"] / atoms_1gpu)   # this case's own one-GPU cost
        f = rank_figures(per_atom, rho, box, m["grid"], skin, args.bandwidth, args.t_fixed)
        pred = f["t_compute"] + f["t_exchange"]
        meas = m["step_2gpu"]["cuda-ipc"]
        print(f"| {m['case']} | {m['step_1gpu']:.1f} | {meas:.1f} | {pred:.1f} | {m['step_1gpu'] / meas:.2f} | "
              f"{m['step_1gpu'] / pred:.2f} |")


def predict(args):
    model = MODELS[args.model]
    rho = DENSITY[args.lattice]
    side = (args.atoms / rho) ** (1 / 3)
    kind = "weak, per GPU" if args.weak else "strong, in all"
    print(f"{args.model} on {args.lattice}, {args.atoms:.0f} atoms ({kind}), skin {args.skin} A, link "
          f"{args.bandwidth} GB/s, {args.t_fixed} ms fixed per exchange; compute from one H200's "
          f"{model['ms_per_atom'] * 1e3:.1f} us per atom-step\n")
    print("| GPUs (grid) | atoms per GPU | ghost nodes per GPU | of them across links | MB per exchange | exchanges "
          "| exchange ms | compute ms | step ms | speed-up | efficiency |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    base = None
    for n in args.grids:
        grid = grid_for(n)
        box = [side * grid[d] for d in range(3)] if args.weak else [side] * 3
        f = rank_figures(model, rho, box, grid, args.skin, args.bandwidth, args.t_fixed)
        step = f["t_compute"] + f["t_exchange"]
        base = base or step
        speed = "-" if args.weak else f"{base / step:.2f}x"
        eff = base / step if args.weak else base / step / n
        print(f"| {n} ({'x'.join(map(str, grid))}) | {f['owned']:.0f} | {f['ghosts']:.0f} | {f['cross']:.0f} | "
              f"{f['mb_per_exchange']:.1f} | {f['exchanges']} | {f['t_exchange']:.1f} | {f['t_compute']:.1f} | "
              f"{step:.1f} | {speed} | {eff * 100:.0f} % |")


def grid_for(n):
    """LAMMPS' choice for a cube: the most cubic factorisation."""
    best = None
    for x in range(1, n + 1):
        for y in range(1, n + 1):
            if n % (x * y):
                continue
            z = n // (x * y)
            score = max(x, y, z) / min(x, y, z)
            if best is None or score < best[0]:
                best = (score, (x, y, z))
    return best[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the two-H200 runs")
    ap.add_argument("--model", choices=sorted(MODELS), default="uma-s")
    ap.add_argument("--lattice", choices=sorted(DENSITY), default="diamond")
    ap.add_argument("--atoms", type=float, default=1e6, help="strong: total atoms; weak (--weak): atoms per GPU")
    ap.add_argument("--weak", action="store_true")
    ap.add_argument("--grids", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4, 8])
    ap.add_argument("--skin", type=float, default=2.0)
    ap.add_argument("--bandwidth", type=float, default=10.0,
                    help="GB/s at which a rank's exchange moves the rows that cross ranks: the smaller of the link's "
                         "rate and what the exchange reaches on the device (8-12 GB/s with CUDA IPC, --check)")
    ap.add_argument("--t-fixed", type=float, default=0.0, help="ms per exchange beyond the bytes (latency)")
    args = ap.parse_args()
    if args.check:
        check(args)
    else:
        predict(args)


if __name__ == "__main__":
    main()
