"""The committed goldens still match the reference (regression), their edge lists match the
neighbour search, and the band golden matches the dense Wigner D."""

import hashlib
import json

import numpy as np
import pytest
import torch

from conftest import GOLDEN_DIR
from edgeframe_ref.band import band_blocks, frame_matrix, wigner_band
from edgeframe_ref.calc import evaluate
from edgeframe_ref.potential_io import load_model, read_potential
from edgeframe_ref.sph import dense_wigner_d
from edgeframe_ref.structures import Atoms

# Recomputing on another CPU / BLAS may change the rounding of sums; values are O(1..100).
TOL_REL = 1e-12   # relative to the largest magnitude of each quantity

INDEX = json.loads((GOLDEN_DIR / "index.json").read_text())


def load_golden(name):
    return json.loads((GOLDEN_DIR / name).read_text())


def test_index_and_size():
    files = [p for p in GOLDEN_DIR.iterdir() if p.suffix in (".json", ".safetensors")]
    assert sum(p.stat().st_size for p in files) < 5e6
    assert len(INDEX["goldens"]) == 16
    for model in INDEX["models"].values():
        path = GOLDEN_DIR / model["file"]
        assert hashlib.sha256(path.read_bytes()).hexdigest() == model["sha256"]
        cfg, _, meta = read_potential(path)
        assert meta["dtype"] == model["storage"] and cfg.mmax == model["mmax"]


@pytest.mark.parametrize("name", INDEX["goldens"])
def test_golden_reproduces(name):
    g = load_golden(name)
    path = GOLDEN_DIR / g["model_file"]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == g["model_sha256"]
    model = load_model(path)
    s = g["structure"]
    atoms = Atoms(np.array(s["positions"]), np.array(s["cell"]), tuple(s["pbc"]), s["symbols"])
    edges = (torch.tensor(g["edges"]["i"]), torch.tensor(g["edges"]["j"]),
             torch.tensor(g["edges"]["shift"]).reshape(-1, 3))
    out = evaluate(model, atoms)
    # the neighbour search reproduces the stored edge list exactly, in order
    for a, b in zip(out["edges"], edges):
        assert torch.equal(a, b)
    want = g["results"]
    for key in ("energies", "forces", "virial", "atom_virial"):
        ref = np.array(want[key])
        assert np.abs(out[key] - ref).max() <= TOL_REL * np.abs(ref).max(), key
    assert abs(out["energy"] - want["energy"]) <= TOL_REL * abs(want["energy"])
    assert abs(sum(want["energies"]) - want["energy"]) < 1e-10 * abs(want["energy"])


def test_band_golden():
    g = load_golden(INDEX["band"])
    vec = torch.tensor(g["edge_vectors"], dtype=torch.float64)
    lmax = g["lmax"]
    dense = dense_wigner_d(frame_matrix(vec), lmax)
    for key, b in g["bands"].items():
        mmax = b["mmax"]
        band = torch.tensor(b["band"], dtype=torch.float64)
        assert band.shape == (len(vec), b["size"])
        assert torch.allclose(band, wigner_band(vec, lmax, mmax), atol=1e-14, rtol=0)
        for l, blk in enumerate(band_blocks(band, lmax, mmax)):
            k = min(l, mmax)
            assert torch.allclose(blk, dense[l][:, l - k:l + k + 1], atol=1e-12, rtol=0)
        jac = torch.tensor(b["d_band_d_vec"], dtype=torch.float64)
        assert jac.shape == (len(vec), b["size"], 3)
        # Jacobian against central differences, away from the chart switch (entries 11-14)
        h = 1e-6
        for e in [0, 2, 4, 7, 9, 15, 16, 17]:
            for c in range(3):
                d = torch.zeros(3, dtype=torch.float64)
                d[c] = h
                fd = (wigner_band((vec[e] + d)[None], lmax, mmax)
                      - wigner_band((vec[e] - d)[None], lmax, mmax))[0] / (2 * h)
                assert (fd - jac[e, :, c]).abs().max() < 1e-8
