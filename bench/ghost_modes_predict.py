"""Predicted ghost atoms, nodes and edges per rank for pair_style edgeframe's two ghost modes
on a cubic diamond box split into a processor grid (bench/ghost_modes.sh prints these next to
the measured end-of-run line).

Subdomain a x b x c, atom density rho, ghost cutoff d:
  LAMMPS ghosts   = rho * ((a+2d)(b+2d)(c+2d) - abc)          (brick comm fills this box)
  atoms within s of the subdomain ~ rho * Steiner(s) = rho * (abc + 2s(ab+bc+ca) + pi s^2 (a+b+c) + 4/3 pi s^3)
exchange (d = r_cut + skin): nodes = owned + ghosts within r_cut + skin of an owned atom
  ~ rho * Steiner(r_cut + skin); edges = owned * z (only owned atoms receive edges).
shell (d = T r_cut + skin): nodes = atoms within T hops on the r_cut + skin list, clipped by the
  ghost box ~ rho * Steiner(T r_cut + skin); edges = receivers within T-1 hops * z
  ~ rho * Steiner((T-1)(r_cut + skin)) * z (clipped by the ghost box).
z = neighbours within r_cut in the perfect lattice (the 0.02 A rattle changes it by ~0).

The continuous estimate ignores that atoms sit on lattice planes 0.89 A apart (a ghost slab of
4.5 A holds 5 or 6 planes, +-10%). The lattice count next to it replays both graph
constructions on the rattled lattice (periodic images in LAMMPS' ghost box of rank 0, hops on
the r_cut + skin list, edges within r_cut), which is what the measurement should reproduce up
to the 0.02 A rattle.
"""
import argparse
import itertools
import math

import numpy as np


def steiner(a, b, c, s):
    return a * b * c + 2 * s * (a * b + b * c + c * a) + math.pi * s * s * (a + b + c) + 4 / 3 * math.pi * s ** 3


def coordination(a0, r_cut):
    basis = np.array([[0, 0, 0], [0, .5, .5], [.5, 0, .5], [.5, .5, 0]])
    basis = np.vstack([basis, basis + .25])
    n = int(math.ceil(r_cut / a0)) + 1
    pts = np.array([(np.array(c) + b) * a0 for c in itertools.product(range(-n, n + 1), repeat=3) for b in basis])
    r = np.linalg.norm(pts, axis=1)
    return int(((r > 1e-9) & (r < r_cut)).sum())


def diamond_sites(reps, a0):
    basis = np.array([[0, 0, 0], [0, .5, .5], [.5, 0, .5], [.5, .5, 0]])
    basis = np.vstack([basis, basis + .25])
    cells = np.array(list(itertools.product(range(reps), repeat=3)))
    return ((cells[:, None, :] + basis[None, :, :]).reshape(-1, 3)) * a0


def neighbours(points, centres, r, chunk=512):
    """For each centre, indices of points within r (excluding itself), by chunked brute force."""
    out = []
    for s in range(0, len(centres), chunk):
        d = np.linalg.norm(centres[s:s + chunk, None, :] - points[None, :, :], axis=2)
        out += [np.nonzero((row > 1e-9) & (row < r))[0] for row in d]
    return out


def lattice_count(reps, a0, grid, r_cut, skin, layers, rattle, seed):
    """Rank 0's ghosts / nodes / ghost nodes / edges for both modes, on the lattice displaced
    uniformly by +-rattle per component (as displace_atoms random does; with rattle 0 the
    boundary planes would all go to one side, with it they split between neighbouring ranks)."""
    box = reps * a0
    sub = np.array([box / g for g in grid])
    lo = np.zeros(3)
    hi = lo + sub
    rng = np.random.default_rng(seed)
    sites = np.mod(diamond_sites(reps, a0) + rng.uniform(-rattle, rattle, (8 * reps ** 3, 3)), box)
    out = {}
    for mode, d in (("exchange", r_cut + skin), ("shell", layers * r_cut + skin)):
        n_img = int(math.ceil(d / box)) + 1
        shifts = np.array(list(itertools.product(range(-n_img, n_img + 1), repeat=3))) * box
        pts = (sites[None, :, :] + shifts[:, None, :]).reshape(-1, 3)
        keep = np.all((pts >= lo - d) & (pts < hi + d), axis=1)
        pts = pts[keep]
        owned = np.all((pts >= lo) & (pts < hi), axis=1)
        pts = np.vstack([pts[owned], pts[~owned]])
        n_own = int(owned.sum())
        ghosts = len(pts) - n_own
        hop = np.full(len(pts), -1)
        hop[:n_own] = 0
        frontier = np.arange(n_own)
        lists = {}
        for h in range(1 if mode == "exchange" else layers):
            nb = neighbours(pts, pts[frontier], r_cut + skin)
            nxt = set()
            for k, js in zip(frontier, nb):
                lists[k] = js
                for j in js:
                    if hop[j] < 0:
                        hop[j] = h + 1
                        nxt.add(j)
            frontier = np.array(sorted(nxt), dtype=int)
        nodes = int((hop >= 0).sum())
        receivers = np.arange(n_own) if mode == "exchange" else np.nonzero((hop >= 0) & (hop <= layers - 1))[0]
        edges = sum(int((np.linalg.norm(pts[lists[i]] - pts[i], axis=1) < r_cut).sum()) for i in receivers)
        out[mode] = (n_own, ghosts, nodes, nodes - n_own, edges)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=6)
    ap.add_argument("--a0", type=float, default=3.567)
    ap.add_argument("--r-cut", type=float, default=3.5)
    ap.add_argument("--skin", type=float, default=1.0)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--grid", default="2 1 1")
    ap.add_argument("--rattle", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-lattice", action="store_true", help="continuous estimate only (large ghost boxes)")
    args = ap.parse_args()
    px, py, pz = (int(v) for v in args.grid.split())
    box = args.reps * args.a0
    a, b, c = box / px, box / py, box / pz
    rho = 8 / args.a0 ** 3
    owned = rho * a * b * c
    z = coordination(args.a0, args.r_cut)
    rows = []
    for mode, d in (("exchange", args.r_cut + args.skin), ("shell", args.layers * args.r_cut + args.skin)):
        ghosts = rho * ((a + 2 * d) * (b + 2 * d) * (c + 2 * d) - a * b * c)
        clip = rho * (a + 2 * d) * (b + 2 * d) * (c + 2 * d)
        nodes = min(rho * steiner(a, b, c, d), clip)
        if mode == "exchange":
            edges = owned * z
        else:
            recv = min(rho * steiner(a, b, c, (args.layers - 1) * (args.r_cut + args.skin)), clip)
            edges = recv * z
        rows.append((mode, ghosts, nodes, nodes - owned, edges))
    print(f"predicted per rank (grid {args.grid}, subdomain {a:.2f} x {b:.2f} x {c:.2f} A, owned {owned:.1f}, z = {z}):")
    for mode, ghosts, nodes, gnodes, edges in rows:
        print(f"  continuous  {mode:8s} LAMMPS ghosts {ghosts:8.0f} | nodes {nodes:8.0f} | ghost nodes {gnodes:8.0f} | "
              f"edges {edges:9.0f}")
    if args.no_lattice:
        return
    counted = lattice_count(args.reps, args.a0, (px, py, pz), args.r_cut, args.skin, args.layers, args.rattle,
                            args.seed)
    for mode, (n_own, ghosts, nodes, gnodes, edges) in counted.items():
        print(f"  lattice     {mode:8s} LAMMPS ghosts {ghosts:8d} | nodes {nodes:8d} | ghost nodes {gnodes:8d} | "
              f"edges {edges:9d}  (owned {n_own})")


if __name__ == "__main__":
    main()
