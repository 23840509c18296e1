# Experiment only: a v2 best.pt -> potential file (the state's "m." prefix dropped).
import sys, json, torch
sys.path[:0] = ["tools", "tools/train"]
from edgeframe_ref.potential_io_v2 import write_potential_v2
from edgeframe_ref.model_v2 import ModelConfigV2
ck = torch.load(sys.argv[1], map_location="cpu")
cfg = ModelConfigV2(**ck["cfg"])
t = {}
for k, v in ck["state"].items():
    k = k[2:] if k.startswith("m.") else k
    k = k[len("params."):].replace("__", ".") if k.startswith("params.") else k
    if k != "z_of_species":
        t[k] = v.to(torch.float64)
write_potential_v2(sys.argv[2], cfg, t, dtype="float32",
                   provenance=dict(data="tools/data/Cu.npz", note="CPU experiment, epoch %s of a best.pt" % ck.get("epoch")))
print("wrote", sys.argv[2])
