"""A potential whose finite float64 weights overflow float32 once two atoms come close enough.

Used to test the "non-finite energy or force" error with a real input: nothing in the pair style
or the engine is told to fail. The file is an ordinary potential (the reader accepts it: every
weight is finite); run in fp64 it is harmless, run in fp32 its radial network overflows.

Construction (layer 0 only, from a small random model):
  * the first radial linear reads only the first Bessel function, with weight S on every hidden
    unit; the second radial linear has non-negative weights. For an edge of length r the radial
    output g then grows as S * rbf_1(r) (biases and species terms are O(1) against S ~ 1e36), and
    rbf_1(r) = sqrt(2/r_c) sin(pi r / r_c) / r * u(r / r_c) rises monotonically as r shrinks;
  * both SO(2) linears are scaled by S^-1/2, so that messages, energies and forces stay O(1)
    while g stays finite: the model is an ordinary smooth potential up to the distance where
    some float32 intermediate (g, or g times a node feature) passes 3.4e38 and becomes inf;
    the next GEMM turns that into NaN, and the energies of the two atoms of that edge are NaN.
S is chosen by bisection with the PyTorch reference in float32 so that the threshold lies halfway
(in log S) between two consecutive steps of the test's trajectory: one atom moved towards
another by fix move at a constant speed. Consecutive steps differ by ~1.7% in rbf_1, against
~1e-6 between the engine's and the reference's float32 rounding, so the step is not marginal.
"""
import copy
import math

import numpy as np
import torch

from reference_case import potential_io, random_init, structures

R_CUT = 3.0          # Angstrom
START_GAP = 2.2      # Angstrom, atom 6 - atom 5 at step 0
STEP_MOVE = 0.02     # Angstrom per step (fix move linear -20 A/ps, timestep 0.001 ps)
SPEED = 20.0         # Angstrom/ps
TIMESTEP = 0.001     # ps

# Atoms 1-4: a 2.0 A square (fixed); atoms 5 and 6: a pair 6 A away from it, 6 approaching 5.
SQUARE = [[0.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [2.0, 2.0, 0.0]]
PAIR = [[8.0, 0.0, 0.0], [8.0 + START_GAP, 0.0, 0.0]]


def positions_at(step):
    pos = np.array(SQUARE + PAIR, dtype=np.float64)
    pos[5, 0] -= SPEED * TIMESTEP * step
    return pos


def structure_at(step):
    return structures.Atoms(positions_at(step), np.zeros((3, 3)), (False, False, False), ["C"] * 6)


def base_model():
    cfg = random_init.make_config("custom", species=("C",), lmax=2, mmax=1, r_cut=R_CUT, layers=2, channels=8,
                                  hidden_channels=8, ffn_channels=8, radial_hidden=16, readout_hidden=8, edge_emb=4,
                                  avg_neighbors=4.0)
    model = random_init.random_model(cfg, seed=11)
    with torch.no_grad():
        w0 = model.get_parameter("layers.0.radial.0.weight")
        w0[:, :cfg.n_rbf] = 0.0
        w0[:, 0] = 1.0
        w1 = model.get_parameter("layers.0.radial.1.weight")
        w1.copy_(w1.abs())
    return model


def scaled(model, s):
    """A copy with radial weight S and the layer-0 SO(2) linears scaled by S^-1/2."""
    out = copy.deepcopy(model)
    with torch.no_grad():
        out.get_parameter("layers.0.radial.0.weight")[:, 0] = s
        for name, p in out.named_parameters():
            if name.startswith("layers.0.so2_") and "bias" not in name:
                p.mul_(s ** -0.5)
    return out


def overflows(model, step):
    """True when the float32 reference gives a non-finite energy or force at this step."""
    from reference_case import calc
    res = calc.evaluate(model.to(torch.float32), structure_at(step), want_virial=False)
    return not (math.isfinite(res["energy"]) and np.all(np.isfinite(res["forces"])))


def threshold_scale(model, step):
    """Smallest S (to 0.1%) at which the float32 model overflows at this step."""
    lo, hi = 1e30, 1e38    # fp32 max is 3.4e38: S itself must stay finite
    assert not overflows(scaled(model, lo), step) and overflows(scaled(model, hi), step)
    while hi / lo > 1.001:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if overflows(scaled(model, mid), step) else (mid, hi)
    return hi


def write(path, first_bad_step=30):
    """Write the potential to `path`; float32 runs of the trajectory above first overflow at
    `first_bad_step`. Returns the float64 model."""
    model = base_model()
    s_bad = threshold_scale(model, first_bad_step)         # at this S, step first_bad_step overflows
    s_good = threshold_scale(model, first_bad_step - 1)    # ... and step first_bad_step - 1 at this one
    assert s_bad < s_good
    s = math.sqrt(s_bad * s_good)
    final = scaled(model, s)
    for step in range(first_bad_step + 1):
        assert overflows(copy.deepcopy(final), step) == (step == first_bad_step), step
    potential_io.write_potential(path, final, provenance={"data": "none: tests/lammps/overflow_model.py, "
                                                          f"radial scale {s:.6g} overflows float32 at "
                                                          f"{START_GAP - STEP_MOVE * first_bad_step:.3f} A"})
    return final
