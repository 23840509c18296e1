# Run from the repository root: $EDGEFRAME_PYTHON bench/results/validate-v2c/Cu-sf/sf_check.py [POTENTIAL ...]
# (without arguments: the two files of sf_check.txt)
# Model energies of copper's stacking-fault frames against EAM's, relative to perfect fcc.
import sys, torch, numpy as np
sys.path[:0] = ["tools", "tools/train"]
from edgeframe_ref.potential_io_v2 import load_model_v2
from train.dataset import build_splits
from train.train import predict, _wrap_v2
torch.set_num_threads(1)
s = build_splits("tools/data", "Cu", ["Cu"], 5.5, "build-train/cache")
paths = sys.argv[1:] or ["potentials/Cu-v2.safetensors", "bench/results/training/gpu-2026-12-03b/call1-Cu.safetensors"]
for path in paths:
    m = _wrap_v2(load_model_v2(path, dtype=torch.float64), ["Cu"])
    out = []
    for split in ("train", "val", "test"):
        g = s[split]; fam = np.array(g.family)
        for i in np.where((fam == "fault") | (fam == "relaxed") | (fam == "lattice"))[0]:
            b = g.batch(torch.tensor([int(i)]))
            n = int(b["n_atoms"][0])
            if not (n in (72, 144) or (fam[i] == "lattice" and n == 32)): continue
            with torch.enable_grad():
                e, _, _ = predict(m, b, create_graph=False)
            out.append((split, fam[i], n, float(e[0]) / n, float(b["energy"][0]) / n))
    lat = [o for o in out if o[1] == "lattice" and abs(o[4] - (-3.540218330119449)) < 1e-9]
    e_fcc_model = lat[0][3]
    print(path, "perfect fcc: model", e_fcc_model, "EAM", lat[0][4])
    for sp, f, n, em, er in out:
        if f == "lattice": continue
        print(f"  {sp:5s} {f:8s} n={n:3d}  dE/atom model {1e3*(em-e_fcc_model):8.3f}  EAM {1e3*(er-lat[0][4]):8.3f} meV")
