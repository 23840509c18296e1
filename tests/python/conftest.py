"""pytest setup: make tools/edgeframe_ref importable and share small model factories."""

import pathlib
import subprocess
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from edgeframe_ref.config import ModelConfig  # noqa: E402
from edgeframe_ref.random_init import random_model  # noqa: E402

GOLDEN_DIR = ROOT / "tests" / "data" / "goldens"

# (lmax, mmax) combinations the model tests sweep: L = 1..4, mmax 1 and 2 (mmax <= L).
LM_CASES = [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (4, 1), (4, 2)]


def small_config(lmax=2, mmax=1, r_cut=3.2, layers=3, channels=4, species=("C", "Cu"), **kw):
    """A tiny model that still exercises every code path. Three layers: with two, the m > 0
    SO(2) blocks and the m != 0 band rows cannot influence the energy (doc/model.md,
    "Parameters without effect"), and the invariance tests would be blind to them."""
    base = dict(lmax=lmax, mmax=mmax, r_cut=r_cut, layers=layers, channels=channels,
                hidden_channels=channels, ffn_channels=2 * channels, n_rbf=6, envelope_p=5,
                edge_emb=3, radial_hidden=8, readout_hidden=8, avg_neighbors=6.0)
    base.update(kw)
    return ModelConfig(species=list(species), **base)


def small_model(lmax=2, mmax=1, seed=0, dtype=torch.float64, **kw):
    return random_model(small_config(lmax, mmax, **kw), seed=seed, dtype=dtype)


# The test systems are tiny: one thread is faster than two and keeps runs reproducible.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _deterministic():
    torch.manual_seed(1234)
    yield


def run_train(tmp_path, name, args, *extra):
    """Run tools/train/train.py with args + extra into tmp_path/name (neighbour lists cached in
    tmp_path/cache). Returns (CompletedProcess, output directory)."""
    out = tmp_path / name
    run = subprocess.run([sys.executable, "train/train.py", *args, "--out", str(out), "--cache", str(tmp_path / "cache"),
                          *extra], cwd=ROOT / "tools", capture_output=True, text=True, timeout=600)
    return run, out
