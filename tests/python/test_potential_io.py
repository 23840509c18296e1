"""Potential file: writer/reader round trip, agreement with the safetensors package, and one
rejection test per defect listed in doc/potential-format.md."""

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors import safe_open

from conftest import small_model
from edgeframe_ref.calc import evaluate
from edgeframe_ref.config import parameter_shapes
from edgeframe_ref.potential_io import (METADATA_KEY, PotentialFormatError, load_model,
                                        read_potential, species_map, write_potential)
from edgeframe_ref.structures import axis_cluster


@pytest.fixture
def model():
    return small_model(3, 2, seed=2, r_cut=3.2)


@pytest.fixture
def good_file(tmp_path, model):
    path = tmp_path / "good.safetensors"
    write_potential(path, model, provenance={"data": "random weights (test)"})
    return path


# ---------------------------------------------------------------- raw safetensors helpers
def split(path):
    """-> (header dict, meta dict, data bytes) of a safetensors file."""
    blob = path.read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = json.loads(header["__metadata__"][METADATA_KEY])
    return header, meta, blob[8 + n:]


def join(path, header, data, meta=None):
    header = dict(header)
    if meta is not None:
        header["__metadata__"] = {METADATA_KEY: json.dumps(meta)}
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


def rewrite(tmp_path, good_file, edit_meta=None, edit_header=None, name="bad.safetensors"):
    header, meta, data = split(good_file)
    if edit_meta:
        edit_meta(meta)
    if edit_header:
        data = edit_header(header, meta, data) or data
    return join(tmp_path / name, header, data, meta)


def rejects(path, *words, reader=read_potential):
    with pytest.raises(PotentialFormatError) as err:
        reader(path)
    msg = str(err.value)
    assert str(path) in msg
    for w in words:
        assert w in msg, f"{w!r} not in message: {msg}"
    return msg


# ---------------------------------------------------------------- good files
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_round_trip(tmp_path, model, dtype):
    path = tmp_path / f"m_{dtype}.safetensors"
    write_potential(path, model, dtype=dtype, trained_precision="float32",
                    provenance={"data": "none", "date": "2026-11-29"})
    cfg, tensors, meta = read_potential(path)
    assert cfg == model.cfg
    assert meta["dtype"] == dtype and meta["trained_precision"] == "float32"
    assert meta["provenance"]["date"] == "2026-11-29"
    assert list(tensors) == list(parameter_shapes(cfg))
    for name, t in tensors.items():
        want = model.get_parameter(name).detach()
        assert t.dtype == getattr(torch, dtype)
        assert torch.equal(t, want.to(t.dtype))
    loaded = load_model(path)
    a, b = evaluate(model, axis_cluster()), evaluate(loaded, axis_cluster())
    if dtype == "float64":
        assert a["energy"] == b["energy"] and np.array_equal(a["forces"], b["forces"])
    else:
        assert abs(a["energy"] - b["energy"]) < 1e-5 * abs(a["energy"])


def test_safetensors_package_agrees(good_file):
    _, tensors, meta = read_potential(good_file)
    with safe_open(str(good_file), "pt") as f:
        assert json.loads(f.metadata()[METADATA_KEY]) == meta
        assert set(f.keys()) == set(tensors)
        for k in f.keys():
            assert torch.equal(f.get_tensor(k), tensors[k])


def test_reader_reads_any_valid_layout(tmp_path, good_file):
    # tensors in reverse order in the data section, header unpadded: still a valid file
    header, meta, data = split(good_file)
    names = sorted((k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"])
    chunks, pos = [], 0
    for k in reversed(names):
        b, e = header[k]["data_offsets"]
        chunks.append(data[b:e])
        header[k]["data_offsets"] = [pos, pos + e - b]
        pos += e - b
    path = join(tmp_path / "reordered.safetensors", header, b"".join(chunks), meta)
    _, t2, _ = read_potential(path)
    _, t1, _ = read_potential(good_file)
    assert all(torch.equal(t1[k], t2[k]) for k in t1)


def test_species_map(good_file):
    _, _, meta = read_potential(good_file)
    assert species_map(meta, ["Cu", "NULL", "C"]) == [1, -1, 0]
    with pytest.raises(PotentialFormatError, match=r"no element Si \(it has: C, Cu\)"):
        species_map(meta, ["C", "Si"])


# ---------------------------------------------------------------- rejections
def test_reject_truncated(tmp_path, good_file):
    blob = good_file.read_bytes()
    for cut, words in [(5, ("truncated", "8-byte")), (100, ("truncated", "header claims")),
                       (len(blob) - 3, ("truncated", "extends past"))]:
        p = tmp_path / f"cut{cut}.safetensors"
        p.write_bytes(blob[:cut])
        rejects(p, *words)


def test_reject_header_not_json(tmp_path, good_file):
    blob = bytearray(good_file.read_bytes())
    blob[8:20] = b"this is not "
    p = tmp_path / "garbage.safetensors"
    p.write_bytes(bytes(blob))
    rejects(p, "header is not JSON")
    (n,) = struct.unpack("<Q", bytes(blob[:8]))
    blob[8:8 + 4] = b"\xff\xfe\xfd\xfc"
    p.write_bytes(bytes(blob))
    rejects(p, "header is not JSON")


def test_reject_duplicate_header_key(tmp_path, good_file):
    header, meta, data = split(good_file)
    text = json.dumps(dict(header, __metadata__={METADATA_KEY: json.dumps(meta)}))
    entry = json.dumps(header["species_embedding"])
    text = text[:-1] + f', "species_embedding": {entry}}}'
    p = tmp_path / "dup.safetensors"
    p.write_bytes(struct.pack("<Q", len(text)) + text.encode() + data)
    rejects(p, "header is not JSON", "duplicate key 'species_embedding'")


def test_reject_not_an_edgeframe_file(tmp_path, good_file):
    header, meta, data = split(good_file)
    header["__metadata__"] = {"other": "x"}
    rejects(join(tmp_path / "x.safetensors", header, data), "no 'edgeframe' entry")
    header["__metadata__"] = {METADATA_KEY: "{not json"}
    rejects(join(tmp_path / "y.safetensors", header, data), "metadata 'edgeframe' is not JSON")


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_reject_unknown_format_version(tmp_path, good_file, version):
    p = rewrite(tmp_path, good_file, lambda m: m.update(format_version=version))
    rejects(p, "unknown format version", "this reader knows: 1")


def test_reject_missing_tensor(tmp_path, good_file):
    def edit(header, meta, data):
        del header["layers.1.so2_1.m2.weight_i"]
    rejects(rewrite(tmp_path, good_file, edit_header=edit),
            "missing tensor(s): layers.1.so2_1.m2.weight_i")


def test_reject_extra_tensor(tmp_path, good_file):
    def edit(header, meta, data):
        header["layers.9.extra"] = {"dtype": "F64", "shape": [1],
                                    "data_offsets": [len(data), len(data) + 8]}
        return data + struct.pack("<d", 1.0)
    rejects(rewrite(tmp_path, good_file, edit_header=edit), "unexpected tensor(s): layers.9.extra")


def test_reject_wrong_shape(tmp_path, good_file):
    def edit(header, meta, data):
        header["readout.0.weight"]["shape"] = header["readout.0.weight"]["shape"][::-1]
    rejects(rewrite(tmp_path, good_file, edit_header=edit), "tensor readout.0.weight has shape")
    # a config that implies other shapes than the stored tensors
    rejects(rewrite(tmp_path, good_file, lambda m: m["model"].update(channels=5), name="c.st"),
            "has shape", "config implies")


def test_reject_wrong_dtype(tmp_path, model):
    from safetensors.torch import save_file
    path = tmp_path / "m.safetensors"
    meta = write_potential(path, model)
    tensors = {n: model.get_parameter(n).detach() for n in parameter_shapes(model.cfg)}
    tensors["layers.0.norm_scale"] = tensors["layers.0.norm_scale"].float()
    save_file(tensors, str(path), metadata={METADATA_KEY: json.dumps(meta)})
    rejects(path, "tensor layers.0.norm_scale has dtype F32", "float64")
    path2 = rewrite(tmp_path, path, lambda m: m.update(dtype="float16"))
    rejects(path2, "dtype 'float16'")


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_reject_non_finite(tmp_path, good_file, bad):
    def edit(header, meta, data):
        b, _ = header["layers.1.radial.2.bias"]["data_offsets"]
        data = bytearray(data)
        data[b + 8 * 3:b + 8 * 4] = struct.pack("<d", bad)
        return bytes(data)
    rejects(rewrite(tmp_path, good_file, edit_header=edit),
            "tensor layers.1.radial.2.bias has 1 non-finite value", "flat index 3")


def test_reject_duplicate_species(tmp_path, good_file):
    def edit(m):
        m["species"] = ["C", "C"]
    rejects(rewrite(tmp_path, good_file, edit), "duplicate species 'C'")


def test_reject_unknown_species(tmp_path, good_file):
    def edit(m):
        m["species"] = ["C", "Xx"]
        m["e0"] = {"C": 0.0, "Xx": 0.0}
    rejects(rewrite(tmp_path, good_file, edit), "unknown species 'Xx'")


@pytest.mark.parametrize("edit,words", [
    (lambda m: m.update(units="real"), ("units",)),
    (lambda m: m["e0"].pop("Cu"), ("e0 must give one energy per species",)),
    (lambda m: m["e0"].update(C="x"), ("e0[C]",)),
    (lambda m: m["model"].update(mmax=3), ("mmax",)),
    (lambda m: m["model"].update(lmax=1), ("mmax",)),
    (lambda m: m["model"].update(r_cut=-1.0), ("r_cut",)),
    (lambda m: m["model"].update(layers=2.0), ("layers",)),
    (lambda m: m["model"].pop("n_rbf"), ("missing: n_rbf",)),
    (lambda m: m["model"].update(attention=True), ("unknown model hyperparameter(s): attention",)),
    (lambda m: m.pop("provenance"), ("missing key(s): provenance",)),
    (lambda m: m.update(comment="x"), ("unknown key(s): comment",)),
    (lambda m: m["provenance"].pop("date"), ("provenance",)),
])
def test_reject_bad_config(tmp_path, good_file, edit, words):
    rejects(rewrite(tmp_path, good_file, edit), *words)


def test_reject_bad_offsets_and_trailing_bytes(tmp_path, good_file):
    def overlap(header, meta, data):
        header["readout.1.bias"]["data_offsets"] = list(header["readout.1.weight"]["data_offsets"][:1]) \
            + [header["readout.1.weight"]["data_offsets"][0] + 8]
    rejects(rewrite(tmp_path, good_file, edit_header=overlap), "gap or overlap")

    def trailing(header, meta, data):
        return data + b"\0" * 8
    rejects(rewrite(tmp_path, good_file, edit_header=trailing, name="t.st"), "trailing")

    def short(header, meta, data):
        header["readout.1.bias"]["data_offsets"][1] += 8
    rejects(rewrite(tmp_path, good_file, edit_header=short, name="s.st"), "shape needs 8")


# ---------------------------------------------------------------- model v2 (the shipped carbon file)
V2_FILE = Path(__file__).resolve().parents[2] / "potentials" / "C-diamond-v2.safetensors"


@pytest.mark.parametrize("edit,words", [
    (lambda m: m.update(default_task="default"), ("config has unknown key(s): default_task", "belongs under 'model'")),
    (lambda m: m.update(provenance="trained here"), ("provenance must be an object",)),
    (lambda m: m["model"]["tasks"]["default"].update(rmsd=0.0), ("rmsd must be a finite positive number, got 0.0",)),
])
def test_v2_reader_rejects_a_misplaced_key_a_text_provenance_and_a_zero_rmsd(tmp_path, edit, words):
    # The Python reader and the engine's (tests/unit/test_potential.cpp) say the same.
    from edgeframe_ref.potential_io_v2 import read_potential_v2
    read_potential_v2(V2_FILE)
    header, meta, data = split(V2_FILE)
    edit(meta)
    rejects(join(tmp_path / "bad.safetensors", header, data, meta), *words, reader=read_potential_v2)
