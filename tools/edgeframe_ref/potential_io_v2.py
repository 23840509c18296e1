"""Potential files of format version 2 (model v2, doc/potential-format.md "Version 2").

Same container as version 1 (safetensors: 8-byte header length, JSON header, raw little-endian
data; the header's "__metadata__" holds "edgeframe" = the JSON config), so the byte-level
checks of potential_io.read_potential apply unchanged. The config differs: "model" holds
ModelConfigV2's fields, "provenance" says where the weights came from (for a converted
fairchem checkpoint: its file name, sha256, fairchem version, model_id and backbone class).
"""

import datetime
import json

import torch

from . import __version__
from .config_v2 import ModelConfigV2, parameter_shapes_v2
from .potential_io import DTYPES, METADATA_KEY, FORMAT_NAME, PotentialFormatError, read_container

FORMAT_VERSION_V2 = 2
TOP_KEYS_V2 = ["format", "format_version", "units", "model", "dtype", "provenance"]


def write_potential_v2(path, cfg, tensors, dtype="float64", provenance=None):
    """Write a v2 model: cfg (ModelConfigV2), tensors {name: tensor} matching
    parameter_shapes_v2(cfg) exactly."""
    from safetensors.torch import save_file
    cfg.validate()
    shapes = parameter_shapes_v2(cfg)
    missing = [k for k in shapes if k not in tensors]
    extra = sorted(set(tensors) - set(shapes))
    if missing or extra:
        raise ValueError(f"tensors do not match the v2 parameter table: missing {missing[:5]}, "
                         f"unexpected {extra[:5]}")
    for k, shape in shapes.items():
        if tuple(tensors[k].shape) != tuple(shape):
            raise ValueError(f"tensor {k} has shape {tuple(tensors[k].shape)}, expected {shape}")
    prov = {"date": datetime.date.today().isoformat(),
            "code_version": f"edgeframe_ref {__version__}"}
    prov.update(provenance or {})
    meta = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION_V2, "units": "metal",
            "model": cfg.to_dict(), "dtype": dtype, "provenance": prov}
    out = {k: tensors[k].detach().to("cpu", DTYPES[dtype][2]).contiguous() for k in shapes}
    save_file(out, str(path), metadata={METADATA_KEY: json.dumps(meta, sort_keys=True)})
    return meta


def read_potential_v2(path):
    """Parse and validate a v2 file. Returns (cfg, tensors, meta); PotentialFormatError names
    the file and the first defect."""
    path = str(path)

    def fail(msg):
        raise PotentialFormatError(f"potential file {path}: {msg}")

    header, meta, data = read_container(path, fail)
    if meta.get("format") != FORMAT_NAME:
        fail(f"config 'format' is {meta.get('format')!r}, expected {FORMAT_NAME!r}")
    if meta.get("format_version") != FORMAT_VERSION_V2:
        fail(f"format version {meta.get('format_version')!r} is not {FORMAT_VERSION_V2}")
    missing = [k for k in TOP_KEYS_V2 if k not in meta]
    if missing:
        fail(f"config is missing key(s): {', '.join(missing)}")
    unknown = [k for k in meta if k not in TOP_KEYS_V2]
    if unknown:
        fail(f"config has unknown key(s): {', '.join(unknown)} (a model hyperparameter belongs under 'model')")
    if not isinstance(meta["provenance"], dict):
        fail("provenance must be an object")
    if meta["units"] != "metal":
        fail(f"units are {meta['units']!r}; only 'metal' is supported")
    if meta["dtype"] not in DTYPES:
        fail(f"dtype {meta['dtype']!r} is not one of {', '.join(DTYPES)}")
    try:
        cfg = ModelConfigV2(**meta["model"]).validate()
    except (TypeError, ValueError) as err:
        fail(f"invalid model hyperparameters: {err}")
    from .potential_io import read_tensors
    tensors = read_tensors(header, data, parameter_shapes_v2(cfg), meta["dtype"], fail)
    return cfg, tensors, meta


def load_model_v2(path, dtype=torch.float64, device="cpu"):
    """Read a v2 file into an EdgeFrameModelV2 (weights cast to `dtype`)."""
    from .model_v2 import EdgeFrameModelV2
    cfg, tensors, meta = read_potential_v2(path)
    model = EdgeFrameModelV2(cfg)
    with torch.no_grad():
        for name, value in tensors.items():
            model.p(name).copy_(value.to(torch.float64))
    model.meta = meta
    return model.to(dtype=dtype, device=device)
