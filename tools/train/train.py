#!/usr/bin/env python3
"""Train an edgeframe potential on the reference data of tools/data (doc/data.md).

    source /opt/edgeframe-deps/env-cpu.sh
    $EDGEFRAME_PYTHON tools/train/train.py --element C --out runs/C --time-budget 1800
    $EDGEFRAME_PYTHON tools/train/train.py --element Cu --out runs/Cu --device cuda --epochs 400

Loss per batch of B frames (N atoms), residuals in float64:
    w_E mean_b ((E_b - E_b^ref) / n_b)^2 + w_F mean_{i,a} (F_ia - F_ia^ref)^2
    + w_W mean_b,ab ((W_b,ab - W_b,ab^ref) / n_b)^2
(eV/atom, eV/A, eV/atom). Forces and virial come from one autograd pass through the edge
vectors (doc/model.md step 5) with create_graph, so the loss differentiates through them.

Before training: e0 per element by least squares on the training energies (E_b ~ sum_s
n_bs e0_s), avg_neighbors = mean edges per atom of the training frames at the model cutoff.
Adam, linear warm-up (--warmup-steps, default the first epoch) then cosine decay to
--lr-min over the planned epochs (with --time-budget the plan is fixed after the first epoch from its duration),
exponential moving average (EMA) of the weights, used for validation, checkpoints and the
written potential; early stopping on the validation loss (--patience epochs).

Writes to --out: last.pt (resume state), best.pt (best EMA weights), history.json,
loss.png, metrics.json (test set), parity.png and <element>.safetensors (the potential,
through edgeframe_ref.potential_io.write_potential, provenance filled in).
"""

import argparse
import copy
import datetime
import json
import math
import pathlib
import signal
import sys
import time

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from edgeframe_ref import __version__ as REF_VERSION  # noqa: E402
from edgeframe_ref.config import ModelConfig, parameter_shapes  # noqa: E402
from edgeframe_ref.model import EdgeFrameModel  # noqa: E402
from edgeframe_ref.potential_io import load_model, write_potential  # noqa: E402
from edgeframe_ref.potential_io_v2 import load_model_v2, write_potential_v2  # noqa: E402
from edgeframe_ref.config_v2 import ModelConfigV2  # noqa: E402
from train import __version__ as TRAIN_VERSION  # noqa: E402
from train.dataset import build_splits  # noqa: E402
from train.v2 import PRESETS_V2, e0_of, init_model_v2, make_config_v2  # noqa: E402

# Shapes of the shipped models (potentials/README.md says why).
PRESETS = {
    "C": dict(r_cut=3.5, lmax=2, mmax=1, channels=48, hidden_channels=48, ffn_channels=96,
              layers=2, n_rbf=10, envelope_p=5, edge_emb=8, radial_hidden=64,
              readout_hidden=64),
    "Cu": dict(r_cut=5.5, lmax=2, mmax=1, channels=48, hidden_channels=48, ffn_channels=96,
               layers=2, n_rbf=10, envelope_p=5, edge_emb=8, radial_hidden=64,
               readout_hidden=64),
}
DTYPES = {"float64": torch.float64, "float32": torch.float32}


# ---------------------------------------------------------------------------- model
def init_model(cfg, seed):
    """Fresh weights: N(0, 1/fan_in) matrices (each SO(2) W_r, W_i 1/(2 fan_in)), N(0, 1)
    embeddings, zero biases, unit norm scales; the last readout layer x0.1 so that the
    initial energies sit close to e0."""
    model = EdgeFrameModel(cfg)
    gen = torch.Generator().manual_seed(seed)
    f64 = dict(dtype=torch.float64, generator=gen)
    with torch.no_grad():
        for name, shape in parameter_shapes(cfg).items():
            p = model.get_parameter(name)
            if name.endswith("scale"):
                p.fill_(1.0)
            elif name.endswith("bias"):
                p.zero_()
            elif name.endswith("embedding"):
                p.copy_(torch.randn(shape, **f64))
            else:
                var = (0.5 if name.endswith(("weight_r", "weight_i")) else 1.0) / shape[-1]
                p.copy_(torch.randn(shape, **f64) * math.sqrt(var))
        model.get_parameter("readout.1.weight").mul_(0.1)
    return model


def predict(model, b, create_graph):
    """Energies [B], forces [N, 3], virials [B, 3, 3] (float64) of a batch."""
    dtype = next(model.parameters()).dtype
    vec64 = b["vec"]
    vec = vec64.to(dtype).requires_grad_(True)
    e_atom = model(b["species"], b["edge_i"], b["edge_j"], vec)
    B = b["n_atoms"].numel()
    energy = torch.zeros(B, dtype=torch.float64, device=vec.device).index_add(
        0, b["atom_frame"], e_atom.to(torch.float64))
    (g,) = torch.autograd.grad(e_atom.sum(), vec, create_graph=create_graph)
    g = g.to(torch.float64)
    n = b["species"].numel()
    forces = torch.zeros(n, 3, dtype=torch.float64, device=vec.device)
    forces = forces.index_add(0, b["edge_i"], g).index_add(0, b["edge_j"], -g)
    w_e = -(vec64[:, :, None] * g[:, None, :])
    virial = torch.zeros(B, 3, 3, dtype=torch.float64, device=vec.device).index_add(
        0, b["edge_frame"], w_e)
    return energy, forces, virial


def loss_terms(pred, b, energy_weight=None):
    """Mean squared errors of energy per atom, forces and virial per atom over a batch;
    energy_weight [B] (--energy-weight) multiplies each frame's energy term."""
    energy, forces, virial = pred
    n = b["n_atoms"].to(torch.float64)
    de = (energy - b["energy"]) / n
    df = forces - b["forces"]
    dw = (virial - b["virial"]) / n[:, None, None]
    le = de.pow(2) if energy_weight is None else energy_weight * de.pow(2)
    return le.mean(), df.pow(2).mean(), dw.pow(2).mean()


def run_split(model, graphs, batch_size):
    """Predictions for every frame of a split, in order (no graph kept)."""
    es, fs, ws = [], [], []
    for start in range(0, graphs.n_frames, batch_size):
        idx = torch.arange(start, min(start + batch_size, graphs.n_frames))
        b = graphs.batch(idx)
        with torch.enable_grad():
            e, f, w = predict(model, b, create_graph=False)
        es.append(e.detach())
        fs.append(f.detach())
        ws.append(w.detach())
    return torch.cat(es), torch.cat(fs), torch.cat(ws)


def metrics(model, graphs, batch_size, weights=None, energy_factors=None):
    """RMSEs (meV/atom, meV/A, meV/atom for the virial) overall and per family, + loss (the
    training objective: with energy_factors, --energy-weight's per-family multipliers)."""
    e, f, w = run_split(model, graphs, batch_size)
    n = graphs.n_atoms.to(torch.float64)
    de = ((e - graphs.energy) / n).cpu().numpy()
    df = (f - graphs.forces).cpu().numpy()
    dw = ((w - graphs.virial) / n[:, None, None]).cpu().numpy()
    atom_frame = np.repeat(np.arange(graphs.n_frames), graphs.n_atoms.cpu().numpy())
    rms = lambda x: float(np.sqrt(np.mean(np.square(x)))) if x.size else float("nan")  # noqa
    out = dict(frames=graphs.n_frames, atoms=int(n.sum()), energy_rmse_meV_atom=1e3 * rms(de),
               energy_mae_meV_atom=1e3 * float(np.mean(np.abs(de))),
               force_rmse_meV_A=1e3 * rms(df), force_mae_meV_A=1e3 * float(np.mean(np.abs(df))),
               virial_rmse_meV_atom=1e3 * rms(dw),
               force_ref_rms_meV_A=1e3 * rms(graphs.forces.cpu().numpy()))
    if weights is not None:
        ew = family_weights(graphs.family, energy_factors or {}).numpy()
        out["loss"] = weights[0] * float(np.mean(ew * de ** 2)) + weights[1] * float(np.mean(df ** 2)) \
            + weights[2] * float(np.mean(dw ** 2))
    fam = np.array(graphs.family)
    out["per_family"] = {}
    for name in dict.fromkeys(graphs.family):
        sel = fam == name
        out["per_family"][name] = dict(frames=int(sel.sum()),
                                       energy_rmse_meV_atom=1e3 * rms(de[sel]),
                                       force_rmse_meV_A=1e3 * rms(df[sel[atom_frame]]),
                                       virial_rmse_meV_atom=1e3 * rms(dw[sel]))
    return out, (e, f, w)


# ---------------------------------------------------------------------------- plots
def plot_history(history, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ep = [h["epoch"] for h in history]
    fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
    ax[0].semilogy(ep, [h["train_loss"] for h in history], label="train (running)")
    ax[0].semilogy(ep, [h["val"]["loss"] for h in history], label="val (EMA)")
    ax[0].set_ylabel("loss")
    ax[1].semilogy(ep, [h["val"]["energy_rmse_meV_atom"] for h in history])
    ax[1].set_ylabel("val energy RMSE (meV/atom)")
    ax[2].semilogy(ep, [h["val"]["force_rmse_meV_A"] for h in history])
    ax[2].set_ylabel("val force RMSE (meV/A)")
    for a in ax:
        a.set_xlabel("epoch")
        a.grid(alpha=0.3)
    ax[0].legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def parity_title(element, m):
    """The parity plot's title from a split's metrics (train.py's parity.png, evaluate.py --parity)."""
    return (f"{element} test set: E {m['energy_rmse_meV_atom']:.2f} meV/atom, "
            f"F {m['force_rmse_meV_A']:.1f} meV/A RMSE")


def plot_parity(graphs, pred, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    e, f, _ = (t.cpu().numpy() for t in pred)
    n = graphs.n_atoms.cpu().numpy()
    eref = graphs.energy.cpu().numpy() / n
    fref = graphs.forces.cpu().numpy().ravel()
    fam = np.array(graphs.family)
    fig, ax = plt.subplots(1, 2, figsize=(10, 4.6))
    for name in dict.fromkeys(graphs.family):
        sel = fam == name
        ax[0].plot(eref[sel], e[sel] / n[sel], ".", ms=4, label=name)
    lo, hi = eref.min(), eref.max()
    ax[0].plot([lo, hi], [lo, hi], "k-", lw=0.6)
    ax[0].set_xlabel("reference energy (eV/atom)")
    ax[0].set_ylabel("edgeframe energy (eV/atom)")
    ax[0].legend(fontsize=7)
    ax[1].plot(fref, f.ravel(), ".", ms=1, alpha=0.3)
    lo, hi = fref.min(), fref.max()
    ax[1].plot([lo, hi], [lo, hi], "k-", lw=0.6)
    ax[1].set_xlabel("reference force component (eV/A)")
    ax[1].set_ylabel("edgeframe force component (eV/A)")
    for a in ax:
        a.grid(alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------- training
def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--element", required=True, choices=sorted(PRESETS))
    ap.add_argument("--model", default="v1", choices=["v1", "v2"],
                    help="model family: v1 (edgeframe's own) or v2 (fairchem's eSCN-MD backbone, "
                         "train/v2.py)")
    ap.add_argument("--data", default=str(ROOT / "tools" / "data"))
    ap.add_argument("--out", required=True, type=pathlib.Path)
    ap.add_argument("--cache", default=None, help="directory for packed neighbour lists")
    ap.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:1, ...")
    ap.add_argument("--dtype", default="float64", choices=sorted(DTYPES))
    ap.add_argument("--store-dtype", default="float64", choices=sorted(DTYPES))
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=1000, help="upper bound on epochs")
    ap.add_argument("--time-budget", type=float, default=0.0,
                    help="seconds of training; fixes the epoch plan after epoch 1 (0: none)")
    ap.add_argument("--batch", type=int, default=16, help="frames per batch")
    ap.add_argument("--eval-batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--lr-min", type=float, default=3e-5)
    ap.add_argument("--w-energy", type=float, default=100.0)
    ap.add_argument("--w-force", type=float, default=1.0)
    ap.add_argument("--w-virial", type=float, default=1.0)
    ap.add_argument("--oversample", nargs="+", default=[], metavar="FAMILY=K",
                    help="each epoch draws the training frames of FAMILY K times (an integer "
                         ">= 1): more weight on a small family, e.g. the near-equilibrium ones "
                         "(doc/data.md) that elastic constants and phonons are made of")
    ap.add_argument("--energy-weight", nargs="+", default=[], metavar="FAMILY=W",
                    help="multiply the energy term of FAMILY's frames by W (> 0) in the loss and "
                         "in the validation loss that picks the best epoch: energy differences "
                         "between nearly equal structures (a stacking fault and the perfect "
                         "crystal) need per-atom energies better than the data set's average")
    ap.add_argument("--energy-difference", nargs="+", default=[], metavar="FAMILY=W",
                    help="fit each FAMILY frame's energy over the --difference-anchor frame's "
                         "(scaled to its atoms) to the reference's difference, weight W times "
                         "the energy weight, in the loss and the validation loss "
                         "(train/differences.py: a stacking fault against the perfect crystal)")
    ap.add_argument("--difference-batch", type=int, default=8,
                    help="--energy-difference frames drawn per step (0: all)")
    ap.add_argument("--difference-anchor", default=None, metavar="TRAJECTORY",
                    help="the training trajectory whose first frame is the anchor of "
                         "--energy-difference, e.g. Cu/lattice/fcc_perfect_s1.0")
    ap.add_argument("--warmup-steps", type=int, default=0, help="0: the first epoch")
    ap.add_argument("--final-splits", nargs="+", default=["train", "val", "test"],
                    choices=["train", "val", "test"], help="splits evaluated at the end")
    ap.add_argument("--ema", type=float, default=0.995)
    ap.add_argument("--clip", type=float, default=10.0, help="gradient-norm clip")
    ap.add_argument("--patience", type=int, default=60, help="epochs without val improvement")
    ap.add_argument("--max-train-frames", type=int, default=0, help="subsample (smoke tests)")
    ap.add_argument("--max-eval-frames", type=int, default=0,
                    help="subsample validation and test sets (smoke tests)")
    ap.add_argument("--eval-every", type=int, default=1, help="validate every k epochs")
    ap.add_argument("--print-every", type=int, default=1, help="log line every k epochs")
    ap.add_argument("--cache-only", action="store_true",
                    help="only build the neighbour-list cache (--cache) and exit")
    ap.add_argument("--name", default=None, help="potential file name (default <element>)")
    ap.add_argument("--init-from", type=pathlib.Path, default=None,
                    help="continue from a best.pt / last.pt of an earlier run, or from a potential "
                         "file (.safetensors, e.g. a shipped one): its model config (e0 and "
                         "avg_neighbors included) and weights; optimiser and schedule start afresh")
    for k, v in {**PRESETS["C"], **PRESETS_V2["C"]}.items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=None)
    return ap.parse_args(argv)


def pick_device(name):
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def parse_oversample(items, families):
    """--oversample FAMILY=K ... -> {family: K}; a family the training split lacks or a K that
    is not an integer >= 1 stops the run with a message naming it."""
    out = {}
    for item in items:
        name, sep, k = item.partition("=")
        if not sep or not k.isdigit() or int(k) < 1:
            raise SystemExit(f"--oversample {item}: expected FAMILY=K with K an integer >= 1")
        if name not in families:
            raise SystemExit(f"--oversample {item}: the training split has no family {name!r} "
                             f"(it has {', '.join(dict.fromkeys(families))})")
        out[name] = int(k)
    return out


def parse_family_weights(option, items, families):
    """OPTION FAMILY=W ... -> {family: W}; a family no split has or a W that is not a number > 0
    stops the run with a message naming the option and the item."""
    out = {}
    for item in items:
        name, sep, w = item.partition("=")
        try:
            value = float(w) if sep else float("nan")
        except ValueError:
            value = float("nan")
        if not (value > 0 and math.isfinite(value)):
            raise SystemExit(f"{option} {item}: expected FAMILY=W with W a number > 0")
        if name not in families:
            raise SystemExit(f"{option} {item}: the data has no family {name!r} "
                             f"(it has {', '.join(dict.fromkeys(families))})")
        out[name] = value
    return out


def parse_energy_weight(items, families):
    """--energy-weight FAMILY=W ... -> {family: W} (parse_family_weights)."""
    return parse_family_weights("--energy-weight", items, families)


def family_weights(families, factors):
    """Per-frame multipliers [F] (float64): factors[family], 1 for a family not named."""
    return torch.tensor([factors.get(f, 1.0) for f in families], dtype=torch.float64)


def oversampled_frames(families, factors):
    """The frame indices one epoch draws from: every frame once, a frame of a family in
    factors that many times."""
    reps = torch.tensor([factors.get(f, 1) for f in families], dtype=torch.int64)
    return torch.repeat_interleave(torch.arange(len(families)), reps)


def fit_e0(train, species):
    """Least-squares e0 (eV/atom per species) from total energies and compositions."""
    A = train.composition.cpu().numpy()
    y = train.energy.cpu().numpy()
    sol, *_ = np.linalg.lstsq(A, y, rcond=None)
    return {s: float(sol[k]) for k, s in enumerate(species)}


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = pick_device(args.device)
    dtype = DTYPES[args.dtype]
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.time()

    v2 = args.model == "v2"
    hp = dict((PRESETS_V2 if v2 else PRESETS)[args.element])
    other = set((PRESETS if v2 else PRESETS_V2)[args.element]) - set(hp)
    wrong = sorted("--" + k.replace("_", "-") for k in other if getattr(args, k) is not None)
    if wrong:
        raise SystemExit(f"{', '.join(wrong)}: not a hyperparameter of model {args.model}")
    for k in hp:
        if getattr(args, k) is not None:
            hp[k] = getattr(args, k)
    species = [args.element]
    splits = build_splits(args.data, args.element, species, hp["r_cut"], args.cache)
    data_meta = splits["meta"]
    if args.cache_only:
        print(f"[{args.element}] neighbour lists ready in {args.cache}", flush=True)
        return None
    train, val, test = (splits[s] for s in ("train", "val", "test"))
    train_all = train  # --energy-difference takes its frames from the whole training split
    if args.max_train_frames and train.n_frames > args.max_train_frames:
        from train.dataset import PackedGraphs  # noqa: F401  (subset through batch())
        keep = torch.linspace(0, train.n_frames - 1, args.max_train_frames).round().long()
        sub = train.batch(keep)
        train = _subset(train, keep, sub)
    if args.max_eval_frames:
        val, test = (_subsample(g, args.max_eval_frames) for g in (val, test))
    e0 = fit_e0(train, species)
    avg_nb = round(train.mean_neighbors(), 3)
    cfg = make_config_v2(species, e0, hp) if v2 else \
        ModelConfig(species=species, avg_neighbors=avg_nb, e0=e0, **hp)
    init_state = None
    if args.init_from is not None and v2:
        cfg, init_state, ck = _init_from_v2(args.init_from, cfg, hp)
    elif args.init_from is not None:
        # Continue an earlier run: the same model (its e0 and avg_neighbors too, so the energy
        # surface does not jump), its weights, fresh Adam state and learning-rate schedule.
        if args.init_from.suffix == ".safetensors":
            # A potential file (train.py writes the best EMA weights into it; stored in float32
            # for a float32 run, they are that run's best.pt weights exactly).
            ck = _checkpoint_from_potential(args.init_from)
        else:
            ck = torch.load(args.init_from, map_location="cpu")
            if "v2" in (ck.get("model"), ck.get("model_family")):
                raise SystemExit(f"--init-from {args.init_from}: a model v2 run (pass --model v2)")
        given = ModelConfig(**ck["cfg"])
        differs = [k for k in hp if getattr(given, k) != getattr(cfg, k)]
        if given.species != species or differs:
            raise SystemExit(f"--init-from {args.init_from}: its model differs from this run's "
                             f"({'species' if given.species != species else ', '.join(differs)}); "
                             f"pass the same hyperparameters")
        cfg = given
        init_state = ck["state"] if "state" in ck else ck["ema"]
    model = (init_model_v2(cfg, species, args.seed) if v2 else init_model(cfg, args.seed)).to(
        device=device, dtype=dtype)
    if init_state is not None:
        if v2:      # the species -> Z table is this run's (a potential file has none)
            init_state = {**init_state, "z_of_species": model.z_of_species}
        model.load_state_dict(init_state)
        print(f"[{args.element}] weights from {args.init_from} (epoch {ck.get('epoch', '?')})", flush=True)
    ema = copy.deepcopy(model)
    for p in ema.parameters():
        p.requires_grad_(False)
    for g in (train, val, test, train_all):
        g.to(device)
    diffs = _energy_differences(args, train_all, val, test)
    n_params = sum(p.numel() for p in model.parameters())
    # The model's own avg_neighbors and e0 (with --init-from the earlier run's, not this data's).
    fitted = f" (this data's: avg_neighbors {avg_nb}, e0 {e0})" if init_state is not None else ""
    model_e0 = e0_of(cfg, species) if v2 else cfg.e0
    model_nb = "none (v2)" if v2 else cfg.avg_neighbors
    print(f"[{args.element}] model {args.model}, device {device}, {args.dtype}, {n_params} parameters, "
          f"r_cut {cfg.r_cut} A, avg_neighbors {model_nb}, e0 {model_e0}{fitted}", flush=True)
    print(f"[{args.element}] frames train {train.n_frames} val {val.n_frames} "
          f"test {test.n_frames}; atoms train {int(train.n_atoms.sum())}", flush=True)

    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    weights = (args.w_energy, args.w_force, args.w_virial)
    gen = torch.Generator().manual_seed(args.seed + 1)
    epoch_frames = oversampled_frames(train.family, parse_oversample(args.oversample, train.family))
    energy_factors = parse_energy_weight(args.energy_weight, train.family + val.family + test.family)
    train_energy_weight = family_weights(train.family, energy_factors).to(device)
    if energy_factors:
        print(f"[{args.element}] energy term weighted: "
              f"{', '.join(f'{k} x{v:g}' for k, v in energy_factors.items())}", flush=True)
    if len(epoch_frames) > train.n_frames:
        print(f"[{args.element}] oversampling {' '.join(args.oversample)}: "
              f"{len(epoch_frames)} frames per epoch", flush=True)
    steps_per_epoch = math.ceil(len(epoch_frames) / args.batch)
    planned = args.epochs
    history, best, best_epoch = [], float("inf"), 0
    step = 0
    train_start = time.time()

    warmup = args.warmup_steps if args.warmup_steps > 0 else steps_per_epoch

    def lr_at(epoch, k):
        s = epoch * steps_per_epoch + k
        if s < warmup:                                  # linear warm-up from lr / 10
            return args.lr * (0.1 + 0.9 * s / warmup)
        frac = min(1.0, (s - warmup) / max(1, planned * steps_per_epoch - warmup))
        return args.lr_min + 0.5 * (args.lr - args.lr_min) * (1 + math.cos(math.pi * frac))

    # SIGINT / SIGTERM (e.g. `timeout -s INT`): finish the current step, validate, then write
    # the potential from the best EMA weights as after a normal end; a second signal aborts.
    stop = {"signal": None}

    def on_signal(signum, _frame):
        if stop["signal"] is not None:
            raise KeyboardInterrupt
        stop["signal"] = signal.Signals(signum).name
        print(f"[{args.element}] {stop['signal']}: stopping after this step", flush=True)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)

    def out_of_time():
        return args.time_budget > 0 and time.time() - train_start > 1.05 * args.time_budget

    from tqdm import tqdm
    bar = tqdm(total=planned, desc=f"{args.element} epochs", unit="ep", disable=None,
               dynamic_ncols=True)
    epoch = 0
    stop_reason = "epoch plan done"
    while epoch < planned:
        epoch_start = time.time()
        model.train()
        perm = epoch_frames[torch.randperm(len(epoch_frames), generator=gen)]
        running = 0.0
        for k in range(steps_per_epoch):
            for grp in opt.param_groups:
                grp["lr"] = lr_at(epoch, k)
            idx = perm[k * args.batch:(k + 1) * args.batch]
            b = train.batch(idx)
            le, lf, lw = loss_terms(predict(model, b, create_graph=True), b,
                                    train_energy_weight[idx.to(device)] if energy_factors else None)
            loss = weights[0] * le + weights[1] * lf + weights[2] * lw
            if "train" in diffs:
                loss = loss + weights[0] * diffs["train"].loss(model, args.difference_batch, gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            step += 1
            d = min(args.ema, (1 + step) / (10 + step))
            with torch.no_grad():
                for pe, pm in zip(ema.parameters(), model.parameters()):
                    pe.mul_(d).add_(pm.detach(), alpha=1 - d)
            running += float(loss.detach())
            if stop["signal"] is not None or out_of_time():
                break                                   # partial epoch: still validated below
        steps_done = k + 1
        epoch += 1
        halt = stop["signal"] is not None or out_of_time()
        if epoch % args.eval_every == 0 or epoch == planned or halt or best_epoch == 0:
            vm, _ = metrics(ema, val, args.eval_batch, weights, energy_factors)
            vm.pop("per_family")
            _add_differences(vm, diffs.get("val"), ema, weights)
            rec = dict(epoch=epoch, step=step, lr=lr_at(epoch - 1, steps_per_epoch),
                       train_loss=running / steps_done, val=vm,
                       seconds=round(time.time() - train_start, 1))
            history.append(rec)
            if vm["loss"] < best:
                best, best_epoch = vm["loss"], epoch
                torch.save(dict(state=ema.state_dict(), cfg=cfg.to_dict(), epoch=epoch,
                                model=args.model), out / "best.pt")
            bar.set_postfix_str(f"val E {vm['energy_rmse_meV_atom']:.2f} meV/at, "
                                f"F {vm['force_rmse_meV_A']:.1f} meV/A")
            if epoch % args.print_every == 0 or epoch == 1 or halt:
                print(f"[{args.element}] epoch {epoch}/{planned} {rec['seconds']} s lr "
                      f"{rec['lr']:.2e} train {rec['train_loss']:.4g} val {vm['loss']:.4g} "
                      f"E {vm['energy_rmse_meV_atom']:.2f} meV/atom F "
                      f"{vm['force_rmse_meV_A']:.1f} meV/A W {vm['virial_rmse_meV_atom']:.1f} "
                      f"meV/atom{_difference_note(vm)} ({rec['seconds'] / step:.3f} s/step)", flush=True)
        bar.update(1)
        now = time.time()
        if args.time_budget > 0 and epoch <= 3:
            # plan from the latest epoch's duration (epoch 1 includes warm-up: re-plan at 2, 3)
            elapsed = now - train_start
            planned = epoch + max(1, int((args.time_budget - elapsed) / (now - epoch_start)))
            planned = min(args.epochs, planned)
            bar.total = planned
            print(f"[{args.element}] epoch {epoch} took {now - epoch_start:.1f} s -> plan "
                  f"{planned} epochs for a {args.time_budget:.0f} s budget", flush=True)
        if stop["signal"] is not None:
            stop_reason = f"stopped by {stop['signal']}"
            break
        if halt or out_of_time():
            stop_reason = "time budget spent"
            break
        torch.save(dict(model=model.state_dict(), ema=ema.state_dict(), opt=opt.state_dict(),
                        epoch=epoch, step=step, history=history, cfg=cfg.to_dict(),
                        model_family=args.model),
                   out / "last.pt")
        if epoch - best_epoch > args.patience:
            stop_reason = f"early stop: no val improvement in {args.patience} epochs"
            break
    bar.close()
    train_seconds = time.time() - train_start
    print(f"[{args.element}] {stop_reason}; {epoch} epochs, {step} steps, "
          f"{train_seconds:.0f} s; best epoch {best_epoch}", flush=True)
    (out / "history.json").write_text(json.dumps(history, indent=1) + "\n")
    plot_history(history, out / "loss.png", f"{args.element}: training history")

    # best EMA weights -> potential file -> reload through the validating reader
    best_state = torch.load(out / "best.pt", map_location=device)["state"]
    ema.load_state_dict(best_state)
    name = args.name or args.element
    pot_path = out / f"{name}.safetensors"
    summary = dict(element=args.element, model=args.model, epochs=epoch, best_epoch=best_epoch, steps=step,
                   train_seconds=round(train_seconds), device=str(torch.cuda.get_device_name(device)
                   if device.type == "cuda" else "cpu"), batch=args.batch, lr=args.lr,
                   lr_min=args.lr_min, weights=dict(energy=weights[0], force=weights[1],
                                                    virial=weights[2]), ema=args.ema,
                   seed=args.seed, torch=torch.__version__, stop=stop_reason,
                   oversample=args.oversample or None, energy_weight=args.energy_weight or None,
                   energy_difference=args.energy_difference or None,
                   difference_anchor=args.difference_anchor if args.energy_difference else None,
                   difference_batch=args.difference_batch if args.energy_difference else None,
                   init_from=str(args.init_from) if args.init_from else None)
    data_desc = (f"tools/data/{args.element}.npz (sha256 of arrays "
                 f"{data_meta['sha256_arrays'][:16]}...), {data_meta['potential']['style']} "
                 f"{data_meta['potential']['file']} via LAMMPS; train {train.n_frames} frames, "
                 f"val {val.n_frames}, test {test.n_frames}, split by trajectory")
    provenance = dict(data=data_desc, date=datetime.date.today().isoformat(),
                      code_version=f"edgeframe_ref {REF_VERSION}",
                      generator=f"tools/train/train.py {TRAIN_VERSION}",
                      training=json.dumps(summary, sort_keys=True))
    (out / "provenance.json").write_text(json.dumps(provenance, indent=1) + "\n")
    try:
        if v2:
            provenance["trained_precision"] = args.dtype
            write_potential_v2(pot_path, cfg, ema.to("cpu", torch.float64).named_tensors(),
                               dtype=args.store_dtype, provenance=provenance)
            final = _wrap_v2(load_model_v2(pot_path, dtype=torch.float64, device=device), species)
        else:
            write_potential(pot_path, ema.to("cpu", torch.float64), dtype=args.store_dtype,
                            trained_precision=args.dtype, provenance=provenance)
            final = load_model(pot_path, dtype=torch.float64, device=device)
    except ImportError as err:
        # no safetensors package: best.pt + provenance.json still hold everything needed
        # (tools/train/export.py writes the file later); evaluate the EMA weights directly
        print(f"[{args.element}] could not write {pot_path}: {err}", flush=True)
        final = ema.to(device, torch.float64)
    results = {}
    for split_name, g in (("train", train), ("val", val), ("test", test)):
        if split_name not in args.final_splits:
            continue
        m, pred = metrics(final, g, args.eval_batch, weights, energy_factors)
        _add_differences(m, diffs.get(split_name), final, weights)
        results[split_name] = m
        if split_name == "test":
            plot_parity(g, pred, out / "parity.png", parity_title(args.element, m))
    results["training"] = summary
    results["wall_seconds"] = round(time.time() - t_start)
    (out / "metrics.json").write_text(json.dumps(results, indent=1) + "\n")
    for name in ("test", "val", "train"):    # the first split evaluated, test if asked for
        if name in results:
            break
    else:
        return results
    t = results[name]
    print(f"[{args.element}] {name.upper()} energy RMSE {t['energy_rmse_meV_atom']:.3f} meV/atom, "
          f"force RMSE {t['force_rmse_meV_A']:.2f} meV/A, virial RMSE "
          f"{t['virial_rmse_meV_atom']:.2f} meV/atom{_difference_note(t)} -> {pot_path}", flush=True)
    for fam, v in t["per_family"].items():
        print(f"[{args.element}]   {fam:10s} E {v['energy_rmse_meV_atom']:8.3f} F "
              f"{v['force_rmse_meV_A']:8.2f} W {v['virial_rmse_meV_atom']:8.2f}", flush=True)
    return results


def _checkpoint_from_potential(path):
    """A potential file as --init-from reads a best.pt: cfg, state (float64) and the epoch."""
    file_model = load_model(path, dtype=torch.float64, device=torch.device("cpu"))
    training = json.loads(file_model.meta.get("provenance", {}).get("training", "{}") or "{}")
    return dict(cfg=file_model.cfg.to_dict(), state=file_model.state_dict(),
                epoch=f"{training.get('best_epoch', '?')} of the run that wrote the file")


def _init_from_v2(path, cfg, hp):
    """--init-from for model v2: (cfg, state, checkpoint) of a best.pt / last.pt of a v2 run or
    of a v2 potential file; the shape must equal this run's (hp)."""
    if path.suffix == ".safetensors":
        m = load_model_v2(path)
        training = json.loads(m.meta.get("provenance", {}).get("training", "{}") or "{}")
        given = m.cfg
        state = {"m." + k: v for k, v in m.state_dict().items()}
        ck = dict(epoch=f"{training.get('best_epoch', '?')} of the run that wrote the file")
    else:
        ck = torch.load(path, map_location="cpu")
        if ck.get("model", ck.get("model_family")) != "v2":
            raise SystemExit(f"--init-from {path}: not a model v2 run (pass --model v1)")
        given = ModelConfigV2(**ck["cfg"])
        state = ck["state"] if "state" in ck else ck["ema"]
    differs = [k for k in hp if getattr(given, k) != getattr(cfg, k)]
    if differs:
        raise SystemExit(f"--init-from {path}: its model differs from this run's "
                         f"({', '.join(differs)}); pass the same hyperparameters")
    return given, state, ck


def _energy_differences(args, train_all, val, test):
    """{split: EnergyDifferences} for --energy-difference (splits without such frames left out;
    "train" always present when the option is given)."""
    if not args.energy_difference:
        if args.difference_anchor:
            raise SystemExit("--difference-anchor: given without --energy-difference")
        return {}
    from train.differences import EnergyDifferences, anchor_position
    if not args.difference_anchor:
        raise SystemExit("--energy-difference: needs --difference-anchor TRAJECTORY (the perfect crystal)")
    factors = parse_family_weights("--energy-difference", args.energy_difference,
                                   train_all.family + val.family + test.family)
    anchor = anchor_position(train_all, args.difference_anchor)
    out = {name: EnergyDifferences(g, train_all, anchor, factors)
           for name, g in (("train", train_all), ("val", val), ("test", test))}
    if not len(out["train"]):
        raise SystemExit(f"--energy-difference: the training split has no frame of "
                         f"{', '.join(factors)}")
    print(f"[{args.element}] energy differences against {args.difference_anchor}: "
          f"{', '.join(f'{k} x{v:g}' for k, v in factors.items())} "
          f"({len(out['train'])} training frames)", flush=True)
    return {k: v for k, v in out.items() if len(v)}


def _add_differences(m, diffs, model, weights):
    """m (a metrics dict) gets the difference RMSE and its term in the loss."""
    if diffs is None:
        return
    rmse, mean_sq = diffs.rmse_and_loss(model)
    m["energy_difference_rmse_meV_atom"] = rmse
    if "loss" in m:
        m["loss"] += weights[0] * mean_sq


def _difference_note(m):
    key = "energy_difference_rmse_meV_atom"
    return f" dE {m[key]:.3f} meV/atom" if key in m else ""


def _wrap_v2(model, species):
    """A loaded EdgeFrameModelV2 in the trainer's calling convention (train/v2.py)."""
    from train.v2 import TrainableV2
    return TrainableV2(model.cfg, species, model).to(device=next(model.parameters()).device)


def _subsample(graphs, n):
    """At most n frames of graphs, evenly spread (--max-eval-frames)."""
    if graphs.n_frames <= n:
        return graphs
    keep = torch.linspace(0, graphs.n_frames - 1, n).round().long()
    return _subset(graphs, keep, graphs.batch(keep))


def _subset(graphs, keep, sub):
    """A PackedGraphs holding only frames `keep` (used by --max-train-frames)."""
    g = copy.copy(graphs)
    keep_np = keep.cpu().numpy()
    g.n_frames = len(keep_np)
    g.n_atoms = sub["n_atoms"]
    g.n_edges = graphs.n_edges[keep]
    g.atom_off = torch.cumsum(g.n_atoms, 0) - g.n_atoms
    g.edge_off = torch.cumsum(g.n_edges, 0) - g.n_edges
    g.species, g.forces, g.vec = sub["species"], sub["forces"], sub["vec"]
    g.edge_i = sub["edge_i"] - g.atom_off[sub["edge_frame"]]
    g.edge_j = sub["edge_j"] - g.atom_off[sub["edge_frame"]]
    g.energy, g.virial = sub["energy"], sub["virial"]
    g.composition = graphs.composition[keep]
    g.family = [graphs.family[k] for k in keep_np]
    g.trajectory = [graphs.trajectory[k] for k in keep_np]
    return g


if __name__ == "__main__":
    main()
