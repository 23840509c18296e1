"""examples/active-learning/make_members.py on both model versions: member 0 is the potential
itself, bit for bit; the other members are readable files of the same model whose weights
differ from it by about the requested relative noise."""

import pathlib
import subprocess
import sys

import pytest
import torch

from edgeframe_ref import potential_io, potential_io_v2

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "active-learning" / "make_members.py"


def read_tensors(path):
    if potential_io.format_version(path) == potential_io_v2.FORMAT_VERSION_V2:
        return potential_io_v2.read_potential_v2(path)[1]
    model = potential_io.load_model(path)
    return {name: p.detach() for name, p in model.named_parameters()}


@pytest.mark.parametrize("potential", ["C-diamond-v2.safetensors", "C-diamond.safetensors"])
def test_members_are_the_potential_and_noisy_copies(tmp_path, potential):
    source = ROOT / "potentials" / potential
    sigma = 0.01
    subprocess.run([sys.executable, str(SCRIPT), "--members", "3", "--sigma", str(sigma), "--out", str(tmp_path),
                    "--potential", str(source)], check=True, capture_output=True, text=True)
    base = read_tensors(source)
    member0 = read_tensors(tmp_path / "member0.safetensors")
    assert base.keys() == member0.keys()
    for name in base:
        assert torch.equal(base[name], member0[name]), name
    for k in (1, 2):
        member = read_tensors(tmp_path / f"member{k}.safetensors")
        assert member.keys() == base.keys()
        num = sum(float(((member[n].double() - base[n].double()) ** 2).sum()) for n in base)
        den = sum(float((base[n].double() ** 2).sum()) for n in base)
        # weights x (1 + sigma N(0, 1)): the relative change of the whole weight vector is sigma
        # up to float32 storage and the sampling of N(0, 1) over ~8e5 weights
        assert 0.9 * sigma < (num / den) ** 0.5 < 1.1 * sigma, (k, (num / den) ** 0.5)
