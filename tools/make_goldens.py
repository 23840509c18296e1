#!/usr/bin/env python3
"""Write the reference goldens the C++ engine tests compare against.

    python tools/make_goldens.py                 # (re)write tests/data/goldens/
    python tools/make_goldens.py --check         # regenerate in a temp dir, compare bytes

Everything is deterministic: seeded CPU generators, one torch thread, float64 throughout,
fixed provenance date. The format is described in tests/data/goldens/README.md.
"""

import argparse
import filecmp
import hashlib
import json
import pathlib
import sys
import tempfile

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import edgeframe_ref  # noqa: E402
from edgeframe_ref.band import band_size, edge_frame, wigner_band  # noqa: E402
from edgeframe_ref.calc import evaluate, species_indices  # noqa: E402
from edgeframe_ref.potential_io import load_model, write_potential  # noqa: E402
from edgeframe_ref.random_init import make_config, random_model  # noqa: E402
from edgeframe_ref.structures import (axis_cluster, bcc, diamond, rattle,  # noqa: E402
                                      triclinic_two_species)

GENERATOR_VERSION = "1.0.0"
GOLDEN_FORMAT_VERSION = 1
PROVENANCE_DATE = "2026-11-29"      # fixed so that regeneration is byte-identical
OUT_DIR = HERE.parent / "tests" / "data" / "goldens"

# Reduced-size models with the lmax / mmax / r_cut of the L2 and L3 shapes (DESIGN.md §2).
# C = 16 and T = 3 keep the files small; T = 3 is the fewest layers in which the m > 0 SO(2)
# blocks act (in layer 0 their input is zero, in the last layer their output cannot reach the
# readout). L3 models are stored as float32 to exercise that reader path (results are still
# computed in float64 from the stored values).
SMALL = dict(channels=16, layers=3, radial_hidden=32, readout_hidden=16, edge_emb=8)
MODELS = {
    "L2m1": dict(shape="L2", mmax=1, seed=101, storage="float64"),
    "L2m2": dict(shape="L2", mmax=2, seed=102, storage="float64"),
    "L3m1": dict(shape="L3", mmax=1, seed=103, storage="float32"),
    "L3m2": dict(shape="L3", mmax=2, seed=104, storage="float32"),
}


def structures():
    """name -> (Atoms, description dict)."""
    return {
        "diamond64": (rattle(diamond((2, 2, 2)), 0.08, seed=11),
                      dict(description="diamond C, 2x2x2 conventional cells, a = 3.567 A, "
                                       "rattled", rattle_sigma=0.08, rattle_seed=11)),
        "bcc_cu54": (rattle(bcc((3, 3, 3)), 0.08, seed=12),
                     dict(description="bcc Cu, 3x3x3 cubic cells, a = 2.87 A, rattled",
                          rattle_sigma=0.08, rattle_seed=12)),
        "triclinic_ccu16": (triclinic_two_species(seed=3),
                            dict(description="8 C + 8 Cu at random positions (min distance "
                                             "1.8 A) in a triclinic cell", placement_seed=3)),
        "cluster_axes11": (axis_cluster(),
                           dict(description="open cluster: atoms on the +-x, +-y, +-z axes "
                                            "around one at the origin (edges exactly along the "
                                            "axes, n = +-y in chart 2) plus off-axis atoms")),
    }


def sha256(path):
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()


def to_list(a):
    return np.asarray(a).tolist()


def _format(obj, indent):
    """JSON text: objects indented, a list of scalars on one line, a list of lists one
    element per line. Floats go through json (repr: the shortest string that round-trips a
    float64 exactly, at most 17 significant digits)."""
    pad = " " * indent
    if isinstance(obj, dict):
        items = [f'{pad} {json.dumps(k)}: {_format(v, indent + 1)}' for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and obj and isinstance(obj[0], list):
        items = [pad + " " + _format(v, indent + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    return json.dumps(obj, allow_nan=False, separators=(",", ":"))


def dump(path, obj):
    pathlib.Path(path).write_text(_format(obj, 0) + "\n")


def stamp():
    return {"script": "tools/make_goldens.py", "version": GENERATOR_VERSION,
            "edgeframe_ref": edgeframe_ref.__version__, "torch": torch.__version__,
            "numpy": np.__version__}


def write_models(out_dir):
    files = {}
    for name, spec in MODELS.items():
        cfg = make_config(spec["shape"], mmax=spec["mmax"], **SMALL)
        model = random_model(cfg, seed=spec["seed"])
        path = out_dir / f"model_{name}.safetensors"
        write_potential(path, model, dtype=spec["storage"], trained_precision="none (random)",
                        provenance={"data": f"random weights, seed {spec['seed']} "
                                            f"(edgeframe_ref.random_init)",
                                    "date": PROVENANCE_DATE,
                                    "code_version": f"edgeframe_ref {edgeframe_ref.__version__}",
                                    "generator": f"tools/make_goldens.py {GENERATOR_VERSION}"})
        files[name] = path
    return files


def write_structure_goldens(out_dir, model_files):
    names = []
    for sname, (atoms, desc) in structures().items():
        for mname, path in model_files.items():
            model = load_model(path, dtype=torch.float64)
            res = evaluate(model, atoms)
            i, j, s = res["edges"]
            cfg = model.cfg
            golden = {
                "format": "edgeframe-golden", "format_version": GOLDEN_FORMAT_VERSION,
                "name": f"{sname}_{mname}",
                "generator": dict(stamp(), model_seed=MODELS[mname]["seed"]),
                "model_file": path.name, "model_sha256": sha256(path),
                "model": {"species": cfg.species, "lmax": cfg.lmax, "mmax": cfg.mmax,
                          "r_cut": cfg.r_cut, "layers": cfg.layers, "channels": cfg.channels},
                "structure": dict(desc, name=sname, n_atoms=len(atoms),
                                  symbols=atoms.symbols,
                                  species_index=to_list(species_indices(model, atoms.symbols)),
                                  positions=to_list(atoms.positions), cell=to_list(atoms.cell),
                                  pbc=list(atoms.pbc)),
                "edges": {"count": int(len(i)), "i": to_list(i), "j": to_list(j),
                          "shift": to_list(s)},
                "results": {"energy": res["energy"], "energies": to_list(res["energies"]),
                            "forces": to_list(res["forces"]), "virial": to_list(res["virial"]),
                            "atom_virial": to_list(res["atom_virial"])},
            }
            name = f"{sname}_{mname}.json"
            dump(out_dir / name, golden)
            names.append(name)
            print(f"  {name}: {len(atoms)} atoms, {len(i)} edges, E = {res['energy']:.6f} eV",
                  flush=True)
    return names


def band_edge_vectors():
    """~20 edge vectors: the axes, near-poles, both sides of the chart switch, generic."""
    s = (1 - 0.81) ** 0.5
    below, above = np.nextafter(0.9, 0.0), np.nextafter(0.9, 1.0)
    v = [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1], [0, 2.5, 0],
         [1e-9, 1, -1e-9], [-1e-12, -1, 1e-12], [1e-9, 1e-9, 1], [-1e-9, 1e-9, -1],
         [s, 0.9, 0], [0, -0.9, s],
         [(1 - below ** 2) ** 0.5, below, 0], [(1 - above ** 2) ** 0.5, above, 0],
         [1, 1, 1], [-1.3, 2.2, 0.5], [0.3, -0.4, -2.9], [2.1, 0.7, -1.1], [-0.2, -3.3, 1.9]]
    return torch.tensor(v, dtype=torch.float64)


def write_band_golden(out_dir):
    vec = band_edge_vectors()
    e1, e2, n, chart2 = edge_frame(vec)
    out = {"format": "edgeframe-band-golden", "format_version": GOLDEN_FORMAT_VERSION,
           "generator": stamp(), "lmax": 3, "edge_vectors": to_list(vec),
           "frame": {"e1": to_list(e1), "e2": to_list(e2), "n": to_list(n),
                     "chart2": to_list(chart2)},
           "bands": {}}
    for mmax in (1, 2):
        band = wigner_band(vec, 3, mmax)
        jac = torch.stack([torch.autograd.functional.jacobian(
            lambda v: wigner_band(v[None], 3, mmax)[0], vec[e]) for e in range(len(vec))])
        out["bands"][f"mmax{mmax}"] = {"mmax": mmax, "size": band_size(3, mmax),
                                      "band": to_list(band), "d_band_d_vec": to_list(jac)}
    dump(out_dir / "band_L3.json", out)
    return "band_L3.json"


def generate(out_dir):
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"writing goldens to {out_dir}", flush=True)
    model_files = write_models(out_dir)
    names = write_structure_goldens(out_dir, model_files)
    band = write_band_golden(out_dir)
    index = {"format": "edgeframe-golden-index", "format_version": GOLDEN_FORMAT_VERSION,
             "generator": stamp(),
             "models": {k: {"file": p.name, "sha256": sha256(p), **MODELS[k], **SMALL}
                        for k, p in model_files.items()},
             "goldens": names, "band": band}
    dump(out_dir / "index.json", index)
    total = sum(p.stat().st_size for p in out_dir.iterdir() if p.suffix != ".md")
    print(f"total size {total / 1e6:.2f} MB", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=pathlib.Path, default=OUT_DIR)
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary directory and compare with --out byte "
                         "for byte (exit status 1 on any difference)")
    args = ap.parse_args()
    if not args.check:
        generate(args.out)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        generate(pathlib.Path(tmp))
        names = sorted(p.name for p in pathlib.Path(tmp).iterdir())
        match, mismatch, errors = filecmp.cmpfiles(tmp, args.out, names, shallow=False)
        extra = sorted(p.name for p in args.out.iterdir()
                       if p.suffix in (".json", ".safetensors") and p.name not in names)
        for name in mismatch + errors:
            print(f"DIFFERENT: {name}")
        for name in extra:
            print(f"NOT GENERATED (stale?): {name}")
        print(f"{len(match)} identical, {len(mismatch) + len(errors)} different, "
              f"{len(extra)} stale")
        return 0 if not mismatch and not errors and not extra else 1


if __name__ == "__main__":
    sys.exit(main())
