"""Potential file writer and reader (doc/potential-format.md).

A potential is a safetensors file: 8-byte little-endian header length n, n bytes of JSON
header, then the raw little-endian tensor data. The header's "__metadata__" holds one key,
"edgeframe", whose value is the JSON config. The reader parses the byte format itself so that
every defect gets a message naming it; tests cross-check it against the safetensors package.
"""

import datetime
import json
import math
import struct

import numpy as np
import torch

from . import __version__
from .config import HYPERPARAMETER_KEYS, ModelConfig, parameter_shapes
from .elements import ELEMENTS

FORMAT_NAME = "edgeframe-potential"
FORMAT_VERSION = 1
METADATA_KEY = "edgeframe"
MAX_HEADER_BYTES = 100_000_000            # the safetensors package's own limit
DTYPES = {"float64": ("F64", np.float64, torch.float64, 8),
          "float32": ("F32", np.float32, torch.float32, 4)}
SAFETENSORS_TO_NAME = {v[0]: k for k, v in DTYPES.items()}
# Model hyperparameters stored under config["model"] (species and e0 live at the top level).
MODEL_KEYS = [k for k in HYPERPARAMETER_KEYS if k not in ("species", "e0")]
TOP_KEYS = ["format", "format_version", "units", "species", "e0", "model", "dtype",
            "trained_precision", "provenance"]
PROVENANCE_KEYS = ["data", "date", "code_version"]


class PotentialFormatError(ValueError):
    """A potential file that must not be used; the message names the file and the defect."""


# ------------------------------------------------------------------------------- writing
def make_metadata(cfg, dtype, trained_precision, provenance):
    prov = {"data": "unspecified", "date": datetime.date.today().isoformat(),
            "code_version": f"edgeframe_ref {__version__}"}
    prov.update(provenance or {})
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "units": "metal",
        "species": list(cfg.species),
        "e0": {s: float(cfg.e0[s]) for s in cfg.species},
        "model": {k: getattr(cfg, k) for k in MODEL_KEYS},
        "dtype": dtype,
        "trained_precision": trained_precision,
        "provenance": prov,
    }


def write_potential(path, model, dtype="float64", trained_precision="float64",
                    provenance=None):
    """Write `model` to `path`. dtype: storage dtype of every tensor ("float64"/"float32")."""
    from safetensors.torch import save_file
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    cfg = model.cfg
    meta = make_metadata(cfg, dtype, trained_precision, provenance)
    tensors = {name: model.get_parameter(name).detach().to("cpu", DTYPES[dtype][2]).contiguous()
               for name in parameter_shapes(cfg)}
    save_file(tensors, str(path), metadata={METADATA_KEY: json.dumps(meta, sort_keys=True)})
    return meta


# ------------------------------------------------------------------------------- reading
def _no_duplicates(pairs):
    out = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v)


def _check_config(meta, fail):
    if not isinstance(meta, dict):
        fail(f"config under metadata key '{METADATA_KEY}' is not a JSON object")
    if meta.get("format") != FORMAT_NAME:
        fail(f"config 'format' is {meta.get('format')!r}, expected {FORMAT_NAME!r}")
    version = meta.get("format_version")
    if version != FORMAT_VERSION or not _is_int(version):
        fail(f"unknown format version {version!r} (this reader knows: {FORMAT_VERSION})")
    missing = [k for k in TOP_KEYS if k not in meta]
    extra = sorted(set(meta) - set(TOP_KEYS))
    if missing:
        fail(f"config is missing key(s): {', '.join(missing)}")
    if extra:
        fail(f"config has unknown key(s): {', '.join(extra)} (valid: {', '.join(TOP_KEYS)})")
    if meta["units"] != "metal":
        fail(f"units are {meta['units']!r}; only 'metal' is supported")
    species = meta["species"]
    if not isinstance(species, list) or not species:
        fail("species must be a non-empty list of element symbols")
    seen = set()
    for s in species:
        if not isinstance(s, str) or s not in ELEMENTS:
            fail(f"unknown species {s!r} (not a chemical element symbol)")
        if s in seen:
            fail(f"duplicate species {s!r} in species list {species}")
        seen.add(s)
    e0 = meta["e0"]
    if not isinstance(e0, dict) or set(e0) != set(species):
        got = sorted(e0) if isinstance(e0, dict) else e0
        fail(f"e0 must give one energy per species {species}, got {got}")
    for s, v in e0.items():
        if not _is_number(v):
            fail(f"e0[{s}] = {v!r} is not a finite number")
    model = meta["model"]
    if not isinstance(model, dict):
        fail("config 'model' is not a JSON object")
    missing = [k for k in MODEL_KEYS if k not in model]
    extra = sorted(set(model) - set(MODEL_KEYS))
    if missing:
        fail(f"model hyperparameter(s) missing: {', '.join(missing)}")
    if extra:
        fail(f"unknown model hyperparameter(s): {', '.join(extra)} "
             f"(valid: {', '.join(MODEL_KEYS)})")
    if meta["dtype"] not in DTYPES:
        fail(f"dtype {meta['dtype']!r} is not one of {', '.join(DTYPES)}")
    if not isinstance(meta["trained_precision"], str):
        fail("trained_precision must be a string")
    prov = meta["provenance"]
    if not isinstance(prov, dict) or any(not isinstance(prov.get(k), str)
                                         for k in PROVENANCE_KEYS):
        fail(f"provenance must be an object with string fields {', '.join(PROVENANCE_KEYS)}")
    try:
        cfg = ModelConfig(species=list(species), e0=dict(e0), **model)
        cfg.validate()
    except (TypeError, ValueError) as err:
        fail(f"invalid model hyperparameters: {err}")
    # ModelConfig fills 0 -> default for hidden/ffn channels; the file must be explicit
    for k in MODEL_KEYS:
        if getattr(cfg, k) != model[k]:
            fail(f"model hyperparameter {k} = {model[k]!r} is not valid")
    return cfg


def read_container(path, fail):
    """The safetensors container: (tensor header entries, edgeframe config dict, data bytes).
    fail(msg) raises; every byte-level defect is named."""
    with open(path, "rb") as fh:
        blob = fh.read()
    if len(blob) < 8:
        fail(f"truncated: {len(blob)} bytes, shorter than the 8-byte header length")
    (n_header,) = struct.unpack("<Q", blob[:8])
    if n_header > MAX_HEADER_BYTES:
        fail(f"header length {n_header} exceeds {MAX_HEADER_BYTES} bytes (corrupt file?)")
    if 8 + n_header > len(blob):
        fail(f"truncated: header claims {n_header} bytes but only {len(blob) - 8} follow")
    try:
        header = json.loads(blob[8:8 + n_header].decode("utf-8"),
                            object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError) as err:
        fail(f"header is not JSON: {err}")
    if not isinstance(header, dict):
        fail("header is not a JSON object")
    raw_meta = header.pop("__metadata__", None)
    if not isinstance(raw_meta, dict) or METADATA_KEY not in raw_meta:
        fail(f"no '{METADATA_KEY}' entry in the header's __metadata__ (not an edgeframe potential)")
    try:
        meta = json.loads(raw_meta[METADATA_KEY], object_pairs_hook=_no_duplicates)
    except (TypeError, ValueError) as err:
        fail(f"metadata '{METADATA_KEY}' is not JSON: {err}")
    if not isinstance(meta, dict):
        fail(f"config under metadata key '{METADATA_KEY}' is not a JSON object")
    return header, meta, memoryview(blob)[8 + n_header:]


def read_tensors(header, data, expected, dtype, fail):
    """Check the header's tensor entries against `expected` {name: shape} and return them."""
    missing = [k for k in expected if k not in header]
    extra = sorted(set(header) - set(expected))
    if missing:
        fail(f"missing tensor(s): {', '.join(missing)}")
    if extra:
        fail(f"unexpected tensor(s): {', '.join(extra)}")
    st_dtype, np_dtype, torch_dtype, itemsize = DTYPES[dtype]
    spans = []
    tensors = {}
    for name, shape in expected.items():
        info = header[name]
        if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
            fail(f"tensor {name}: header entry must have exactly dtype, shape, data_offsets")
        got_shape = info["shape"]
        if not isinstance(got_shape, list) or list(got_shape) != list(shape):
            fail(f"tensor {name} has shape {got_shape} but the config implies {list(shape)}")
        if info["dtype"] != st_dtype:
            fail(f"tensor {name} has dtype {info['dtype']} but the config declares "
                 f"{dtype} ({st_dtype})")
        offs = info["data_offsets"]
        if not (isinstance(offs, list) and len(offs) == 2 and all(_is_int(o) for o in offs)
                and 0 <= offs[0] <= offs[1]):
            fail(f"tensor {name}: bad data_offsets {offs}")
        begin, end = offs
        nbytes = itemsize * math.prod(shape)
        if end - begin != nbytes:
            fail(f"tensor {name}: data_offsets span {end - begin} bytes, shape needs {nbytes}")
        if end > len(data):
            fail(f"truncated: tensor {name} data [{begin}, {end}) extends past the end of the "
                 f"data section ({len(data)} bytes)")
        spans.append((begin, end, name))
        arr = np.frombuffer(data[begin:end], dtype=np.dtype(np_dtype).newbyteorder("<"))
        bad = ~np.isfinite(arr)
        if bad.any():
            fail(f"tensor {name} has {int(bad.sum())} non-finite value(s) "
                 f"(first at flat index {int(np.argmax(bad))})")
        tensors[name] = torch.from_numpy(arr.astype(np_dtype).reshape(shape).copy())
    spans.sort()
    pos = 0
    for begin, end, name in spans:
        if begin != pos:
            fail(f"tensor {name}: data_offsets leave a gap or overlap at byte {pos}")
        pos = end
    if pos != len(data):
        fail(f"{len(data) - pos} trailing byte(s) after the last tensor")
    return tensors


def format_version(path):
    """The file's format_version (1 or 2), for readers that take both."""
    path = str(path)

    def fail(msg):
        raise PotentialFormatError(f"potential file {path}: {msg}")

    _, meta, _ = read_container(path, fail)
    return meta.get("format_version")


def read_potential(path):
    """Parse and validate a version-1 potential file.

    Returns (cfg: ModelConfig, tensors: {name: torch tensor in storage dtype}, meta: dict).
    Raises PotentialFormatError naming the file and the first defect found.
    """
    path = str(path)

    def fail(msg):
        raise PotentialFormatError(f"potential file {path}: {msg}")

    header, meta, data = read_container(path, fail)
    cfg = _check_config(meta, fail)
    tensors = read_tensors(header, data, parameter_shapes(cfg), meta["dtype"], fail)
    return cfg, tensors, meta


def load_model(path, dtype=torch.float64, device="cpu"):
    """Read a potential file into an EdgeFrameModel (weights cast to `dtype`)."""
    from .model import EdgeFrameModel
    cfg, tensors, meta = read_potential(path)
    model = EdgeFrameModel(cfg)
    with torch.no_grad():
        for name, value in tensors.items():
            model.get_parameter(name).copy_(value.to(torch.float64))
    model.meta = meta
    return model.to(dtype=dtype, device=device)


def species_map(meta, elements, path="potential"):
    """pair_coeff-style mapping: elements (one per type, 'NULL' allowed) -> species index or -1."""
    species = meta["species"]
    out = []
    for el in elements:
        if el == "NULL":
            out.append(-1)
        elif el not in species:
            raise PotentialFormatError(
                f"{path} has no element {el} (it has: {', '.join(species)})")
        else:
            out.append(species.index(el))
    return out
