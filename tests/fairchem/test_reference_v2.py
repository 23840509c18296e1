"""Model v2's reference (tools/edgeframe_ref/model_v2.py) and the converter
(tools/convert_fairchem.py) against fairchem-core 2.24.0 itself: random-weight checkpoints of
UMA-S 1.2's and eSEN's structure, converted, give fairchem's energy, forces, stress and per-atom
energies in fp64. Also: what the converter must refuse."""

import numpy as np
import pytest
import torch

import convert_fairchem
from edgeframe_ref.potential_io_v2 import load_model_v2, read_potential_v2
from fairchem_side import fairchem_predict, predict_unit, reference_predict, structure
from small_models import esen_like, uma_like, uma_m_like, write_checkpoint

# fp64 agreement asked of model v2 (issue 24): 1e-10 relative, with a floor for values near 0.
REL_FP64 = 1e-10
ABS_FLOOR = 1e-12   # eV, eV/A, eV/A^3: below the double rounding of sums of O(100) terms

CASES = [  # (structure, task, charge, spin)
    ("diamond", "omat", 0, None),
    ("fcc_cu", "omat", 0, None),
    ("bcc_cu", "oc20", 0, None),
    ("mgo", "omat", 0, None),
    ("triclinic", "omat", 0, None),
    ("molecule", "omol", 1, 2),
]


def close(a, b, what):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    err = float(np.abs(a - b).max())
    bound = REL_FP64 * float(np.abs(b).max()) + ABS_FLOOR
    assert np.isfinite(a).all() and err <= bound, f"{what}: max |diff| {err:.3e} > {bound:.3e}"
    return err


@pytest.fixture(scope="module")
def uma(tmp_path_factory):
    d = tmp_path_factory.mktemp("uma")
    ckpt = write_checkpoint(d / "uma.pt", *uma_like(), seed=1)
    assert convert_fairchem.main([str(ckpt), str(d / "uma.safetensors")]) == 0
    return predict_unit(ckpt), load_model_v2(d / "uma.safetensors"), d


@pytest.fixture(scope="module")
def esen(tmp_path_factory):
    d = tmp_path_factory.mktemp("esen")
    ckpt = write_checkpoint(d / "esen.pt", *esen_like(), seed=2, rmsd=0.984507)
    assert convert_fairchem.main([str(ckpt), str(d / "esen.safetensors")]) == 0
    return predict_unit(ckpt), load_model_v2(d / "esen.safetensors"), d


@pytest.mark.parametrize("name,task,charge,spin", CASES)
def test_uma_like_equals_fairchem(uma, name, task, charge, spin):
    unit, model, _ = uma
    atoms = structure(name)
    ref = fairchem_predict(unit, atoms, task, charge, spin)
    ours = reference_predict(model, atoms, task, charge, spin)
    close(ours["energy"], ref["energy"], "energy")
    close(ours["forces"], ref["forces"], "forces")
    close(ours["energies"], ref["energies"], "per-atom energies")
    close(ref["energies"].sum(), ref["energy"], "fairchem's per-atom energies sum to its energy")
    if ref["stress"] is not None:
        close(ours["stress"], ref["stress"], "stress")


@pytest.mark.parametrize("name", ["diamond", "molecule"])
def test_esen_like_equals_fairchem(esen, name):
    unit, model, _ = esen
    atoms = structure(name)
    ref = fairchem_predict(unit, atoms, "omol", 0, None)
    ours = reference_predict(model, atoms, "omol", 0, None)
    close(ours["energy"], ref["energy"], "energy")
    close(ours["forces"], ref["forces"], "forces")
    close(ours["energies"], ref["energies"], "per-atom energies")


@pytest.mark.parametrize("name,task,charge,spin", [("mgo", "omat", 0, None), ("molecule", "omol", 1, 2)])
def test_uma_m_like_equals_fairchem(tmp_path, name, task, charge, spin):
    """UMA-M 1.1's structure (lmax 4, one head for all datasets, no charge balancing)."""
    ckpt = write_checkpoint(tmp_path / "uma_m.pt", *uma_m_like(layers=2), seed=4, rmsd=1.423)
    assert convert_fairchem.main([str(ckpt), str(tmp_path / "uma_m.safetensors")]) == 0
    atoms = structure(name)
    ref = fairchem_predict(predict_unit(ckpt), atoms, task, charge, spin)
    ours = reference_predict(load_model_v2(tmp_path / "uma_m.safetensors"), atoms, task, charge, spin)
    close(ours["energy"], ref["energy"], "energy")
    close(ours["forces"], ref["forces"], "forces")
    close(ours["energies"], ref["energies"], "per-atom energies")


def test_composition_changes_the_experts(uma):
    """The merged weights depend on the composition (UMA's routing): a model whose experts were
    merged for one composition must not be used for another (the engine merges again)."""
    _, model, _ = uma
    a = model.set_system(torch.tensor([6] * 8), task="omat").coefficients
    b = model.set_system(torch.tensor([6] * 4 + [29] * 4), task="omat").coefficients
    assert (a - b).abs().max() > 1e-6


def test_unknown_task_and_bad_charge_are_named(uma):
    _, model, _ = uma
    with pytest.raises(ValueError, match=r"task 'omc' is not one of this model's tasks: oc20, omat, omol"):
        model.set_system(torch.tensor([6]), task="omc")
    with pytest.raises(ValueError, match=r"charge 101 is outside the model's table \(-100..100\)"):
        model.set_system(torch.tensor([6]), task="omat", charge=101)


def test_provenance_and_hyperparameters_in_the_header(uma):
    _, _, d = uma
    cfg, _, meta = read_potential_v2(d / "uma.safetensors")
    prov = meta["provenance"]
    assert prov["source"] == "fairchem checkpoint" and prov["model_id"] == "UMA-S-1.2"
    assert len(prov["checkpoint_sha256"]) == 64 and prov["fairchem_core"] == "2.24.0"
    assert cfg.experts == 4 and cfg.composition_mean_include_self
    assert cfg.charge_balanced_channels == [0, 3]
    assert cfg.tasks["omol"]["default_spin"] == 1 and cfg.tasks["omat"]["default_spin"] == 0


@pytest.mark.parametrize("change,message", [
    (dict(direct_forces=True), r"backbone.direct_forces = True: a direct-force model"),
    (dict(ff_type="grid"), r"backbone.ff_type = 'grid'"),
    (dict(act_type="s2"), r"backbone.act_type = 's2'"),
    (dict(norm_type="layer_norm_sh"), r"backbone.norm_type = 'layer_norm_sh'"),
])
def test_converter_refuses_what_model_v2_lacks(tmp_path, capsys, change, message):
    config, datasets = esen_like(layers=1, channels=8, hidden=8, edge=8)
    config["backbone"].update(change)
    ckpt = tmp_path / "bad.pt"
    try:
        write_checkpoint(ckpt, config, datasets)
    except Exception:   # noqa: BLE001 - fairchem itself may refuse to build the variant
        pytest.skip(f"fairchem 2.24.0 cannot instantiate {change}")
    out = tmp_path / "bad.safetensors"
    assert convert_fairchem.main([str(ckpt), str(out)]) == 2
    err = capsys.readouterr().err
    assert "no file written" in err
    import re
    assert re.search(message, err), err
    assert not out.exists()


def test_converter_refuses_an_unknown_backbone(tmp_path, capsys):
    config, datasets = esen_like(layers=1, channels=8, hidden=8, edge=8)
    ckpt = write_checkpoint(tmp_path / "x.pt", config, datasets)
    blob = torch.load(ckpt, weights_only=False)
    blob.model_config["backbone"]["model"] = "fairchem.core.models.escaip.EScAIPBackbone"
    torch.save(blob, ckpt)
    assert convert_fairchem.main([str(ckpt), str(tmp_path / "x.safetensors")]) == 2
    assert "backbone class 'fairchem.core.models.escaip.EScAIPBackbone' is not supported" in \
        capsys.readouterr().err


@pytest.mark.parametrize("model_id,include_self", [("UMA-S-1.2.1", False), ("UMA-1.1", False), ("UMA-S-1.2", True)])
def test_composition_mean_follows_the_model_id(tmp_path, model_id, include_self):
    """fairchem averages the composition embedding over N + 1 atoms only for UMA-S 1.2 (its
    model_id), over N for UMA-S 1.2.1 and UMA 1.1: the converter sets the rule from the model_id
    and the reference then gives fairchem's numbers for each."""
    config, datasets = uma_like(experts=3, layers=1, channels=8, hidden=8, edge=8, model_id=model_id)
    ckpt = write_checkpoint(tmp_path / "m.pt", config, datasets, seed=5)
    out = tmp_path / "m.safetensors"
    assert convert_fairchem.main([str(ckpt), str(out)]) == 0
    model = load_model_v2(out)
    assert model.cfg.composition_mean_include_self is include_self
    atoms = structure("mgo")
    ref = fairchem_predict(predict_unit(ckpt), atoms, "omat")
    ours = reference_predict(model, atoms, "omat")
    close(ours["energy"], ref["energy"], "energy")
    close(ours["forces"], ref["forces"], "forces")
