#!/usr/bin/env python3
"""GEMM FLOPs of one force step of the engine (energy + forces), counted from the shapes the
evaluator multiplies (src/engine/evaluator.cpp, with its layer-0 / last-layer skips), and the
roofline time at given GEMM rates. Backward = one input-gradient GEMM per forward GEMM (the
weights need no gradient), so a force step is 2x the forward count.

    python3 tools/gemm_flops.py --shape L2 --edges 44346 --nodes 512 --rates 49,196
"""
import argparse

SHAPES = {"L2": dict(L=2, mmax=1, C=128, Ch=128, Cf=256, T=4, n_rbf=8, Hr=64, Ho=64),
          "L3": dict(L=3, mmax=1, C=128, Ch=128, Cf=256, T=4, n_rbf=8, Hr=64, Ho=64)}


def forward_flops(s, E, N):
    L, mmax, C, Ch, Cf, T = s["L"], s["mmax"], s["C"], s["Ch"], s["Cf"], s["T"]
    G = sum(L + 1 - m for m in range(mmax + 1))
    total = 0.0
    for t in range(T):
        first, last = t == 0, t == T - 1
        g_rows = 1 if first else G                     # layer 0 rotates degree 0 only: one multiplier row
        total += E * 2 * (s["n_rbf"] * s["Hr"] + s["Hr"] * s["Hr"] + s["Hr"] * g_rows * 2 * C)  # radial MLP
        cin0 = 2 * C if first else (L + 1) * 2 * C
        total += E * 2 * cin0 * (2 * L + 1) * Ch                                          # so2_1 block 0 (+ gates)
        total += 0 if last else E * 2 * (L + 1) * Ch * (L + 1) * C                        # so2_2 block 0
        total += E * 2 * (L + 1) * Ch * C if last else 0                                  # so2_2 l = 0 rows only
        if not (first or last):
            for m in range(1, mmax + 1):
                rows = 2 * (L + 1 - m)
                total += E * 2 * (rows * 2 * C) * (rows * Ch) + E * 2 * (rows * Ch) * (rows * C)
        D = (L + 1) ** 2
        total += N * 2 * (C * Cf + Cf * C) * (1 if last else D) + (0 if last else N * 2 * C * L * Cf)  # FFN
    total += N * 2 * (C * s["Ho"] + s["Ho"])                                              # readout
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="L2", choices=SHAPES)
    ap.add_argument("--edges", type=int, required=True)
    ap.add_argument("--nodes", type=int, required=True)
    ap.add_argument("--rates", default="49,196", help="GEMM TFLOP/s to price it at (fp32, tf32)")
    a = ap.parse_args()
    f = 2 * forward_flops(SHAPES[a.shape], a.edges, a.nodes)
    print(f"{a.shape}, {a.edges} edges, {a.nodes} nodes: {f / 1e12:.3f} TFLOP of GEMMs per force step "
          f"({f / a.edges / 1e6:.1f} MFLOP per edge)")
    for r in a.rates.split(","):
        print(f"  at {r} TFLOP/s: {f / (float(r) * 1e12) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
