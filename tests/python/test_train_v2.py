"""tools/train/train.py --model v2: a v2 run writes a format-version-2 potential whose model is the
run's best EMA weights (its validation errors re-evaluated from the file equal the run's), whose
element reference is the least-squares e0, and which a continuation (--init-from best.pt or the
file, learning rate ~0) reproduces; v1-only hyperparameters are refused. Tiny model, 4 training
frames (about a minute on the CPU)."""

import json
import re

import pytest
import torch
from conftest import ROOT, run_train
from test_train_init_from import TINY as TINY_V1

from edgeframe_ref.potential_io_v2 import load_model_v2

TINY = ["--model", "v2", "--element", "C", "--device", "cpu", "--dtype", "float64", "--epochs", "1",
        "--max-train-frames", "4", "--batch", "4", "--channels", "8", "--hidden-channels", "8",
        "--edge-channels", "8", "--num-gaussians", "8", "--final-splits", "val", "--max-eval-frames", "24"]


def train(tmp_path, name, *extra):
    return run_train(tmp_path, name, TINY, *extra)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("train_v2")
    first, out1 = train(tmp_path, "first")
    assert first.returncode == 0, first.stdout[-2000:] + first.stderr[-2000:]
    return tmp_path, first, out1


def test_v2_run_writes_a_v2_potential_with_the_fitted_e0(first_run):
    _, first, out1 = first_run
    model = load_model_v2(out1 / "C.safetensors")
    assert model.meta["format_version"] == 2
    assert model.cfg.channels == 8 and model.cfg.mmax == 2 and model.cfg.experts == 0
    e0 = float(re.search(r"e0 \{'C': (\S+)\}", first.stdout).group(1))
    assert model.cfg.tasks["default"]["element_references"][6] == pytest.approx(e0, rel=1e-15)
    training = json.loads(model.meta["provenance"]["training"])
    assert training["model"] == "v2"
    # An isolated atom has no edges: its energy is the element reference plus the head's output
    # on the embedding alone, a finite number.
    model.set_system([6])
    e = model(torch.tensor([6]), torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long),
              torch.zeros(0, 3, dtype=torch.float64))
    assert torch.isfinite(e).all()


@pytest.mark.parametrize("source", ["best.pt", "C.safetensors"])
def test_v2_init_from_reproduces_the_run(first_run, source):
    tmp_path, first, out1 = first_run
    again, out2 = train(tmp_path, "again-" + source, "--init-from", str(out1 / source), "--lr", "1e-12",
                        "--lr-min", "1e-12", "--max-train-frames", "6")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert "weights from" in again.stdout
    v1 = json.loads((out1 / "metrics.json").read_text())["val"]
    v2 = json.loads((out2 / "metrics.json").read_text())["val"]
    for key in ("energy_rmse_meV_atom", "force_rmse_meV_A", "virial_rmse_meV_atom"):
        assert abs(v2[key] - v1[key]) <= 1e-6 * abs(v1[key]), (key, v1[key], v2[key])


def test_v2_refuses_v1_hyperparameters(tmp_path):
    run, _ = train(tmp_path, "bad", "--ffn-channels", "16")
    assert run.returncode != 0
    assert "--ffn-channels: not a hyperparameter of model v2" in run.stdout + run.stderr


def test_v1_refuses_a_v2_checkpoint(first_run, tmp_path):
    _, _, out1 = first_run
    run, _ = run_train(tmp_path, "v1", TINY_V1, "--init-from", str(out1 / "best.pt"))
    assert run.returncode != 0
    assert "a model v2 run (pass --model v2)" in run.stdout + run.stderr


def test_oversampled_frames_repeat_the_named_families():
    from train.train import oversampled_frames, parse_oversample
    families = ["liquid", "lattice", "liquid", "atom", "lattice"]
    factors = parse_oversample(["lattice=3", "atom=2"], families)
    assert factors == {"lattice": 3, "atom": 2}
    assert oversampled_frames(families, factors).tolist() == [0, 1, 1, 1, 2, 3, 3, 4, 4, 4]
    assert oversampled_frames(families, {}).tolist() == [0, 1, 2, 3, 4]
    for bad in (["lattice"], ["lattice=0"], ["lattice=1.5"]):
        with pytest.raises(SystemExit, match="expected FAMILY=K"):
            parse_oversample(bad, families)


def test_energy_weight_multiplies_the_named_families_energy_terms():
    from train.train import family_weights, loss_terms, parse_energy_weight
    families = ["liquid", "fault", "lattice"]
    factors = parse_energy_weight(["fault=20", "lattice=2.5"], families)
    assert factors == {"fault": 20.0, "lattice": 2.5}
    w = family_weights(families, factors)
    assert w.tolist() == [1.0, 20.0, 2.5]
    for bad in (["fault"], ["fault=0"], ["fault=-1"], ["fault=x"], ["fault=inf"]):
        with pytest.raises(SystemExit, match="expected FAMILY=W"):
            parse_energy_weight(bad, families)
    with pytest.raises(SystemExit, match=r"no family 'vacancy' \(it has liquid, fault, lattice\)"):
        parse_energy_weight(["vacancy=3"], families)
    # Energy errors 1, 2, 3 eV per atom (2-atom frames): the weighted mean (1 + 20*4 + 2.5*9) / 3;
    # forces and virial are not weighted.
    b = dict(n_atoms=torch.tensor([2, 2, 2]), energy=torch.zeros(3, dtype=torch.float64),
             forces=torch.zeros(6, 3, dtype=torch.float64), virial=torch.zeros(3, 3, 3, dtype=torch.float64))
    pred = (torch.tensor([2.0, 4.0, 6.0], dtype=torch.float64), torch.ones(6, 3, dtype=torch.float64),
            torch.ones(3, 3, 3, dtype=torch.float64))
    le, lf, lw = loss_terms(pred, b, w)
    assert float(le) == pytest.approx((1 + 80 + 22.5) / 3, rel=1e-15)
    assert float(lf) == 1.0 and float(lw) == pytest.approx(0.25, rel=1e-15)
    assert float(loss_terms(pred, b)[0]) == pytest.approx(14 / 3, rel=1e-15)


def test_oversample_names_a_missing_family_then_weights_a_present_one(first_run):
    tmp_path, _, _ = first_run
    bad, _ = train(tmp_path, "oversample-bad", "--oversample", "nosuchfamily=3")
    assert bad.returncode != 0
    message = re.search(r"--oversample nosuchfamily=3: the training split has no family "
                        r"'nosuchfamily' \(it has ([^)]+)\)", bad.stdout + bad.stderr)
    assert message, (bad.stdout + bad.stderr)[-2000:]
    family = message.group(1).split(", ")[0]
    run, out = train(tmp_path, "oversample", "--oversample", f"{family}=3", "--energy-weight", f"{family}=20")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    # 4 training frames, each of `family` drawn twice more
    n = int(re.search(rf"oversampling {family}=3: (\d+) frames per epoch", run.stdout).group(1))
    assert n > 4 and (n - 4) % 2 == 0
    training = json.loads(load_model_v2(out / "C.safetensors").meta["provenance"]["training"])
    assert training["oversample"] == [f"{family}=3"]
    assert training["energy_weight"] == [f"{family}=20"]
    assert f"energy term weighted: {family} x20" in run.stdout


def test_energy_difference_residual_is_the_difference_per_atom():
    from train.differences import residuals
    # Frames of 4 and 8 atoms against a 2-atom anchor: model minus reference differences
    # (E_f - n_f / 2 E_a) - (E_ref,f - n_f / 2 E_ref,a), per atom of the frame.
    e = torch.tensor([-10.0, -19.0], dtype=torch.float64)
    e_ref = torch.tensor([-10.4, -20.0], dtype=torch.float64)
    r = residuals(e, e_ref, torch.tensor([4, 8]), -5.1, -5.0, 2)
    want = [((-10.0 + 10.2) - (-10.4 + 10.0)) / 4, ((-19.0 + 20.4) - (-20.0 + 20.0)) / 8]
    assert r.tolist() == pytest.approx(want, rel=1e-14)


def test_energy_difference_term_is_measured_against_the_anchor(first_run):
    tmp_path, _, out1 = first_run
    anchor = "C/lattice/diamond_perfect_s1.0"
    for bad, message in ((["--energy-difference", "relaxed=5"], "needs --difference-anchor"),
                         (["--energy-difference", "relaxed=5", "--difference-anchor", "C/none"],
                          "--difference-anchor C/none: the training split has no trajectory of that name"),
                         (["--energy-difference", "nosuch=5", "--difference-anchor", anchor],
                          "--energy-difference nosuch=5: the data has no family 'nosuch'"),
                         (["--difference-anchor", anchor], "given without --energy-difference")):
        run, _ = train(tmp_path, "difference-bad", *bad)
        assert run.returncode != 0 and message in run.stdout + run.stderr, (bad, (run.stdout + run.stderr)[-1500:])
    run, out = train(tmp_path, "difference", "--energy-difference", "relaxed=5", "--difference-anchor", anchor,
                     "--final-splits", "train")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert re.search(r"energy differences against C/lattice/diamond_perfect_s1.0: relaxed x5 \(\d+ training frames\)",
                     run.stdout)
    # The same seed, frames and first step as first_run: the step's loss holds the term on top.
    first_loss = json.loads((out1 / "history.json").read_text())[0]["train_loss"]
    assert json.loads((out / "history.json").read_text())[0]["train_loss"] > first_loss
    reported = json.loads((out / "metrics.json").read_text())["train"]["energy_difference_rmse_meV_atom"]
    # The same RMSE from the written file through the reference model: every training frame of
    # the family against the first frame of the anchor trajectory.
    from train.dataset import build_splits
    model = load_model_v2(out / "C.safetensors", dtype=torch.float64)
    split = build_splits(ROOT / "tools" / "data", "C", ["C"], model.cfg.r_cut, tmp_path / "cache")["train"]

    def energy(k):
        b = split.batch(torch.tensor([k]))
        z = torch.full_like(b["species"], 6)
        model.set_system(z.tolist())
        with torch.no_grad():
            e = float(model(z, b["edge_i"], b["edge_j"], b["vec"]).sum())
        return e, float(b["energy"][0]), int(b["n_atoms"][0])

    e_a, ref_a, n_a = energy(split.trajectory.index(anchor))
    r = []
    for k, fam in enumerate(split.family):
        if fam == "relaxed":
            e, ref, n = energy(k)
            r.append(((e - n / n_a * e_a) - (ref - n / n_a * ref_a)) / n)
    assert len(r) > 1
    assert reported == pytest.approx(1e3 * (sum(x * x for x in r) / len(r)) ** 0.5, rel=1e-9)
