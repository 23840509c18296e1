"""The edgeframe model v2: fairchem's eSCN-MD backbone and energy head (UMA, eSEN), term for
term, in edgeframe's conventions (doc/model.md "Model v2"). Readable, not fast.

Shapes: N atoms, E edges, D = (L+1)^2 coefficients, C channels (fairchem: sphere_channels),
H hidden channels, Ce edge channels. Node features h [N, D, C] in edgeframe's real basis.
Edge e = (i <- j): receiver i = edge_i[e], sender j = edge_j[e], vec = x_j - x_i (+ image);
fairchem's edge_index[0] is our sender j, edge_index[1] our receiver i.
Weights follow the torch convention y = x W^T + b (weight [out, in]).

What differs from v1 (tools/edgeframe_ref/model.py) is listed in DESIGN.md section 2; the
tensor names and shapes are in config_v2.parameter_shapes_v2 and doc/potential-format.md.

System inputs (task, charge, spin, and for UMA's mixture of linear experts the composition)
are fixed for a run: `set_system` turns them into plain per-layer weights and one system
embedding vector before any forward pass, exactly as fairchem's merged-MoLE inference does.
"""

import math

import torch
import torch.nn.functional as F

from .band import band_blocks, wigner_band
from .config_v2 import ModelConfigV2, parameter_shapes_v2
from .model import EdgeFrameModel
from .radial import envelope


class SystemState:
    """What `set_system` derives from (task, charge, spin, composition)."""

    def __init__(self, task, charge, spin, embedding, weights, head, coefficients):
        self.task, self.charge, self.spin = task, charge, spin
        self.embedding = embedding        # [C] added to l = 0 (input and after every first norm)
        self.weights = weights            # {name: merged SO(2) weight} (experts summed)
        self.head = head                  # head name of the task
        self.coefficients = coefficients  # [K] expert coefficients, or None


class EdgeFrameModelV2(torch.nn.Module):
    def __init__(self, cfg: ModelConfigV2):
        super().__init__()
        self.cfg = cfg.validate()
        self.params = torch.nn.ParameterDict()
        for name, shape in parameter_shapes_v2(cfg).items():
            self.params[name.replace(".", "__")] = torch.nn.Parameter(
                torch.zeros(shape, dtype=torch.float64))
        self.system = None

    def p(self, name):
        return self.params[name.replace(".", "__")]

    def named_tensors(self):
        return {k.replace("__", "."): v for k, v in self.params.items()}

    # ------------------------------------------------------------------ system inputs
    def charge_spin_embedding(self, which, value):
        """fairchem ChgSpinEmbedding: which 'charge' or 'spin', an integer value -> [C]."""
        kind = self.cfg.charge_spin_embedding
        if kind == "rand_emb":
            offset, size = (100, 201) if which == "charge" else (0, 101)
            if not 0 <= value + offset < size:
                raise ValueError(f"{which} {value} is outside the model's table "
                                 f"({-offset}..{size - 1 - offset})")
            return self.p(f"system.{which}_table")[value + offset]
        if kind == "pos_emb":
            w = self.p(f"system.{which}_frequencies")
            x = value * w * 2.0 * math.pi
            emb = torch.cat([torch.sin(x), torch.cos(x)])
            return emb * 0.0 if (which == "spin" and value == 0) else emb
        if kind == "lin_emb":
            x = -100.0 if (which == "spin" and value == 0) else float(value)
            return self.p(f"system.{which}_linear.weight")[:, 0] * x + \
                self.p(f"system.{which}_linear.bias")
        raise ValueError(f"charge_spin_embedding {kind!r} is not implemented")

    def set_system(self, z, task=None, charge=None, spin=None):
        """Fix the system inputs. z: atomic numbers of ALL atoms of the system (any order).

        Returns the SystemState. Raises ValueError naming a task, charge or spin the model
        does not accept (the message lists the valid ones)."""
        cfg = self.cfg
        task = cfg.default_task if task is None else task
        if task not in cfg.tasks:
            raise ValueError(f"task {task!r} is not one of this model's tasks: "
                             f"{', '.join(sorted(cfg.tasks))}")
        z = torch.as_tensor(z, dtype=torch.int64)
        charge = cfg.tasks[task].get("default_charge", 0) if charge is None else int(charge)
        spin = cfg.tasks[task].get("default_spin", 0) if spin is None else int(spin)
        parts = [self.charge_spin_embedding("charge", int(charge)),
                 self.charge_spin_embedding("spin", int(spin))]
        if cfg.dataset_embedding:
            parts.append(self.p(f"system.dataset.{cfg.tasks[task]['dataset_embedding']}"))
        emb = F.silu(torch.cat(parts) @ self.p("system.mix.weight").T + self.p("system.mix.bias"))
        weights, coeff = {}, None
        if cfg.experts > 0:
            route = [emb]
            if cfg.composition_embedding:
                per_atom = self.p("mole.composition_embedding")[z]
                # fairchem's index_reduce mean; UMA-S 1.2 includes the initial zero (n + 1).
                denom = len(z) + (1 if cfg.composition_mean_include_self else 0)
                route = [per_atom.sum(0) / denom, emb]
            a = torch.cat(route)
            for k in range(3):
                a = F.silu(a @ self.p(f"mole.routing.{k}.weight").T + self.p(f"mole.routing.{k}.bias"))
            coeff = torch.softmax(a, dim=0) + 0.005
            for name in self.expert_names():
                weights[name] = torch.einsum("k,koi->oi", coeff, self.p(name))
        return self._set(SystemState(task, charge, spin, emb, weights,
                                     cfg.tasks[task]["head"], coeff))

    def _set(self, state):
        self.system = state
        return state

    def expert_names(self):
        cfg = self.cfg
        out = []
        for t in range(cfg.layers):
            for conv in ("so2_1", "so2_2"):
                out.append(f"layers.{t}.{conv}.m0.weight")
                out += [f"layers.{t}.{conv}.m{m}.weight_{c}" for m in range(1, cfg.mmax + 1) for c in "ri"]
        return out

    def w(self, name):
        """A weight, with the experts merged where the model has experts."""
        if self.system is not None and name in self.system.weights:
            return self.system.weights[name]
        return self.p(name)

    # ------------------------------------------------------------------ building blocks
    def rms_norm_sh(self, h, prefix):
        """fairchem rms_norm_sh: centre l = 0 over channels; one scale per atom from the
        degree-balanced mean square; affine weight per (l, c), bias on l = 0."""
        L = self.cfg.lmax
        x0 = h[:, :1] - h[:, :1].mean(dim=2, keepdim=True)
        x = torch.cat([x0, h[:, 1:]], dim=1)
        ms = 0.0
        for l in range(L + 1):
            ms = ms + x[:, l * l:(l + 1) ** 2].pow(2).mean(dim=(1, 2)) / (L + 1)
        scale = (ms + self.cfg.norm_eps).rsqrt()[:, None, None]
        w = self.p(prefix + ".weight")
        w_full = torch.cat([w[l].expand(2 * l + 1, -1) for l in range(L + 1)], dim=0)
        out = x * scale * w_full
        return torch.cat([out[:, :1] + self.p(prefix + ".bias"), out[:, 1:]], dim=1)

    def radial_mlp(self, prefix, x):
        """Linear, LayerNorm, SiLU, Linear, LayerNorm, SiLU, Linear."""
        for k in range(2):
            x = x @ self.p(f"{prefix}.lin{k}.weight").T + self.p(f"{prefix}.lin{k}.bias")
            x = F.layer_norm(x, x.shape[-1:], self.p(f"{prefix}.ln{k}.weight"),
                             self.p(f"{prefix}.ln{k}.bias"), eps=1e-5)
            x = F.silu(x)
        return x @ self.p(f"{prefix}.lin2.weight").T + self.p(f"{prefix}.lin2.bias")

    # The band-row <-> block tables, the SO(2) linear (weights through self.w: experts merged)
    # and the gate are v1's (model.py), unchanged in model v2.
    row_tables = EdgeFrameModel.row_tables
    so2_linear = EdgeFrameModel.so2_linear
    edge_gate = EdgeFrameModel.gate

    def edge_messages(self, t, n, edge_i, edge_j, bands, x_edge, u):
        """One layer's per-edge work: rotate, radial, SO(2) 1, gate, SO(2) 2, unrotate with
        the envelope. Returns [E, D, C]."""
        cfg = self.cfg
        L, M, C, H = cfg.lmax, cfg.mmax, cfg.channels, cfg.hidden_channels
        pre = f"layers.{t}"
        E = edge_i.shape[0]
        rows, pack, unpack, sizes = self.row_tables(n.device)
        ys = []
        for l in range(L + 1):
            nl = n[:, l * l:(l + 1) ** 2]
            ys.append(bands[l] @ torch.cat([nl[edge_j], nl[edge_i]], dim=-1))   # sender first
        packed = torch.cat(ys, dim=1)[:, pack].split(sizes, dim=1)
        blocks = {0: packed[0]}
        for m in range(1, M + 1):
            blocks[m] = (packed[2 * m - 1], packed[2 * m])
        g = self.radial_mlp(pre + ".radial", x_edge)
        off = 0
        for m in range(M + 1):
            size = (L + 1 - m) * 2 * C
            gm = g[:, off:off + size].view(E, L + 1 - m, 2 * C)
            off += size
            blocks[m] = blocks[0] * gm if m == 0 else (blocks[m][0] * gm, blocks[m][1] * gm)
        blocks, gate = self.so2_linear(pre + ".so2_1", blocks, H, True)
        blocks = self.edge_gate(blocks, gate)
        blocks, _ = self.so2_linear(pre + ".so2_2", blocks, C, False)
        w = torch.cat([blocks[0]] + [b for m in range(1, M + 1) for b in blocks[m]], dim=1)
        w = w[:, unpack].split(rows, dim=1)
        msgs = [bands[l].transpose(1, 2) @ w[l] for l in range(L + 1)]
        return torch.cat(msgs, dim=1) * u[:, None, None]

    def feed_forward(self, pre, n):
        """Spectral FFN: per-degree linears, SiLU on l = 0, l >= 1 gated by
        sigmoid(SiLU(Linear(l = 0)))."""
        L = self.cfg.lmax
        q = F.silu(n[:, 0] @ self.p(pre + ".ffn.gate.weight").T + self.p(pre + ".ffn.gate.bias"))
        q = torch.sigmoid(q).view(n.shape[0], L, -1)
        w1, w2 = self.p(pre + ".ffn.lin1.weight"), self.p(pre + ".ffn.lin2.weight")
        out = []
        for l in range(L + 1):
            a = n[:, l * l:(l + 1) ** 2] @ w1[l].T
            a = F.silu(a + self.p(pre + ".ffn.lin1.bias")) if l == 0 else a * q[:, l - 1:l]
            b = a @ w2[l].T
            out.append(b + self.p(pre + ".ffn.lin2.bias") if l == 0 else b)
        return torch.cat(out, dim=1)

    def balance(self, h, natoms):
        """Shift the balanced l = 0 channels so that their sum over all atoms is the charge
        (and the spin channels' sum is spin - 1), as fairchem's balance_channels."""
        cfg, s = self.cfg, self.system
        for (a, b), target in ((cfg.charge_balanced_channels, float(s.charge)),
                               (cfg.spin_balanced_channels, float(s.spin) - 1.0)):
            if b > a:
                x = h[:, 0, a:b]
                corr = (x.sum(0) - target) / natoms
                l0 = torch.cat([h[:, 0, :a], x - corr, h[:, 0, b:]], dim=1)
                h = torch.cat([l0[:, None], h[:, 1:]], dim=1)
        return h

    # ------------------------------------------------------------------ forward
    def forward(self, z, edge_i, edge_j, edge_vec, roll=None, natoms=None):
        """Per-atom energies E_i [N] (eV), rmsd and element references included.

        z [N] atomic numbers (long); edge_i, edge_j [E] (receiver, sender); edge_vec [E, 3]
        Angstrom; natoms: atoms of the whole system (charge balancing), default N."""
        if self.system is None:
            raise RuntimeError("set_system(...) must be called before the forward pass")
        cfg, s = self.cfg, self.system
        L, C = cfg.lmax, cfg.channels
        N = z.shape[0]
        natoms = N if natoms is None else natoms
        r = torch.linalg.norm(edge_vec, dim=-1)
        u = envelope(r / cfg.r_cut, cfg.envelope_p)
        offsets = torch.linspace(0.0, cfg.r_cut, cfg.num_gaussians, dtype=r.dtype, device=r.device)
        width = cfg.gaussian_width * (cfg.r_cut / (cfg.num_gaussians - 1))
        gauss = torch.exp(-0.5 / width ** 2 * (r[:, None] - offsets) ** 2)
        x_edge = torch.cat([gauss, self.p("edge.source_embedding")[z[edge_j]],
                            self.p("edge.target_embedding")[z[edge_i]]], dim=1)
        bands = band_blocks(wigner_band(edge_vec, L, cfg.mmax, roll), L, cfg.mmax)
        h0 = self.p("atom_embedding")[z] + s.embedding
        h = torch.cat([h0[:, None], h0.new_zeros(N, (L + 1) ** 2 - 1, C)], dim=1)
        # edge-degree embedding: m = 0 coefficients from a radial MLP, unrotated, envelope
        rad = self.radial_mlp("edge_degree.radial", x_edge).view(-1, L + 1, C)
        deg = [bands[l][:, min(l, cfg.mmax):min(l, cfg.mmax) + 1].transpose(1, 2) * rad[:, l:l + 1]
               for l in range(L + 1)]
        deg = torch.cat(deg, dim=1) * u[:, None, None]
        h = h.index_add(0, edge_i, deg / cfg.edge_degree_rescale)
        for t in range(cfg.layers):
            pre = f"layers.{t}"
            n = self.rms_norm_sh(h, pre + ".norm1")
            n = torch.cat([n[:, :1] + s.embedding, n[:, 1:]], dim=1)
            h = h + torch.zeros_like(h).index_add(
                0, edge_i, self.edge_messages(t, n, edge_i, edge_j, bands, x_edge, u))
            h = h + self.feed_forward(pre, self.rms_norm_sh(h, pre + ".norm2"))
            h = self.balance(h, natoms)
        f = self.rms_norm_sh(h, "final_norm")[:, 0]
        hp = f"heads.{s.head}"
        f = F.silu(f @ self.p(hp + ".lin0.weight").T + self.p(hp + ".lin0.bias"))
        f = F.silu(f @ self.p(hp + ".lin1.weight").T + self.p(hp + ".lin1.bias"))
        e = (f @ self.p(hp + ".lin2.weight").T + self.p(hp + ".lin2.bias"))[:, 0]
        task = cfg.tasks[s.task]
        e = e * task["rmsd"] + task["mean"] / natoms      # fairchem's mean is per system
        refs = task.get("element_references")
        if refs is not None:
            e = e + torch.as_tensor(refs, dtype=e.dtype, device=e.device)[z]
        return e
