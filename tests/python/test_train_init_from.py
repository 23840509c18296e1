"""tools/train/train.py --init-from: a run continues an earlier run's model (its config, e0 and
avg_neighbors included, and its best EMA weights), from its best.pt or from the potential file it
wrote (.safetensors). A continuation whose learning rate is ~0 must reproduce the earlier run's
validation errors; one with other hyperparameters must stop with a message naming them. Tiny
model and 4 training frames (about a minute on the CPU)."""

import json
import re

import pytest
from conftest import run_train

TINY = ["--element", "C", "--device", "cpu", "--dtype", "float64", "--epochs", "1", "--max-train-frames", "4",
        "--batch", "4", "--channels", "8", "--hidden-channels", "8", "--ffn-channels", "16", "--final-splits", "val"]


def train(tmp_path, name, *extra):
    return run_train(tmp_path, name, TINY, *extra)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("init_from")
    first, out1 = train(tmp_path, "first")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    return tmp_path, first, out1


def test_init_from_continues_the_earlier_model(first_run):
    tmp_path, first, out1 = first_run
    # 6 training frames instead of 4: this data's own e0 and avg_neighbors differ, the model's
    # (the earlier run's) are what the run uses and prints.
    again, out2 = train(tmp_path, "again", "--init-from", str(out1 / "best.pt"), "--lr", "1e-12", "--lr-min", "1e-12",
                        "--max-train-frames", "6")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "weights from" in again.stdout
    model_line = re.compile(r"avg_neighbors (\S+), e0 (\{[^}]*\})")
    assert model_line.search(again.stdout).groups() == model_line.search(first.stdout).groups(), again.stdout[:1500]
    fitted = re.search(r"\(this data's: avg_neighbors \S+, e0 (\{[^}]*\})\)", again.stdout)
    assert fitted and fitted.group(1) != model_line.search(first.stdout).group(2), again.stdout[:1500]
    v1 = json.loads((out1 / "metrics.json").read_text())["val"]
    v2 = json.loads((out2 / "metrics.json").read_text())["val"]
    for key in ("energy_rmse_meV_atom", "force_rmse_meV_A", "virial_rmse_meV_atom"):
        assert abs(v2[key] - v1[key]) <= 1e-6 * abs(v1[key]), (key, v1[key], v2[key])
    assert json.loads((out2 / "metrics.json").read_text())["training"]["init_from"].endswith("best.pt")

    other, _ = train(tmp_path, "other", "--init-from", str(out1 / "best.pt"), "--channels", "12")
    assert other.returncode != 0
    assert "its model differs from this run's (channels)" in other.stdout + other.stderr


def test_init_from_a_potential_file(first_run):
    # The file train.py wrote (float64 storage here, so the weights are best.pt's exactly; a
    # float32 run's float32 file holds them exactly too): same model, same validation errors.
    tmp_path, first, out1 = first_run
    again, out2 = train(tmp_path, "from_file", "--init-from", str(out1 / "C.safetensors"), "--lr", "1e-12",
                        "--lr-min", "1e-12")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "C.safetensors (epoch " in again.stdout
    model_line = re.compile(r"avg_neighbors (\S+), e0 (\{[^}]*\})")
    assert model_line.search(again.stdout).groups() == model_line.search(first.stdout).groups(), again.stdout[:1500]
    v1 = json.loads((out1 / "metrics.json").read_text())["val"]
    v2 = json.loads((out2 / "metrics.json").read_text())["val"]
    for key in ("energy_rmse_meV_atom", "force_rmse_meV_A", "virial_rmse_meV_atom"):
        assert abs(v2[key] - v1[key]) <= 1e-6 * abs(v1[key]), (key, v1[key], v2[key])
    assert json.loads((out2 / "metrics.json").read_text())["training"]["init_from"].endswith("C.safetensors")
