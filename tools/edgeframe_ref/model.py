"""The edgeframe model v1, exactly as doc/model.md states it. Readable, not fast.

Shapes: N atoms, E edges, D = (L+1)^2 coefficients, C channels. Node features h [N, D, C].
Edge e = (i <- j): receiver i = edge_i[e], sender j = edge_j[e], vec = x_j - x_i (+ image).
Weights follow the torch convention y = x W^T + b (weight [out, in]).
"""

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

from .band import band_blocks, wigner_band
from .config import ModelConfig, parameter_shapes, radial_out
from .radial import bessel_rbf


class EdgeFrameModel(torch.nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg.validate()
        for name, shape in parameter_shapes(cfg).items():
            self._register(name, torch.nn.Parameter(torch.zeros(shape, dtype=torch.float64)))
        self.register_buffer("e0", torch.tensor([cfg.e0[s] for s in cfg.species],
                                                dtype=torch.float64), persistent=False)
        # Runtime switch (not a hyperparameter): if > 0, each layer's per-edge work (steps b-g)
        # runs over chunks of this many edges, each under torch.utils.checkpoint, so edge
        # activations are recomputed in the backward pass instead of stored. Same results,
        # peak memory of one chunk instead of all edges x all layers; for large benchmarks.
        self.edge_chunk = 0

    def _register(self, name, param):
        """Register a parameter under a dotted name (state_dict key == file tensor name)."""
        *path, leaf = name.split(".")
        mod = self
        for part in path:
            if not hasattr(mod, part):
                mod.add_module(part, torch.nn.Module())
            mod = getattr(mod, part)
        mod.register_parameter(leaf, param)

    def p(self, name):
        return self.get_parameter(name)

    def w(self, name):
        """An SO(2) linear's weight (model v2 overrides it with experts merged)."""
        return self.p(name)

    def row_tables(self, device):
        """Index tables between band-row order and block order (both [E, R, channels]).

        Band-row order: l = 0..L, then m = -k..k (k = min(l, mmax)), as in the band.
        Block order: block 0 rows (l, 0) for l = 0..L; then for m = 1..mmax the +m rows (l, m)
        and the -m rows (l, -m) for l = m..L.
        Returns (rows per l, pack, unpack, block sizes): y_blocks = y_rows[:, pack] and
        y_rows = y_blocks[:, unpack].
        """
        L, M = self.cfg.lmax, self.cfg.mmax
        order = [(l, m) for l in range(L + 1) for m in range(-min(l, M), min(l, M) + 1)]
        where = {lm: r for r, lm in enumerate(order)}
        blocks = [[(l, 0) for l in range(L + 1)]]
        for m in range(1, M + 1):
            blocks += [[(l, m) for l in range(m, L + 1)], [(l, -m) for l in range(m, L + 1)]]
        pack = [where[lm] for b in blocks for lm in b]
        unpack = sorted(range(len(pack)), key=lambda r: pack[r])
        rows = [2 * min(l, M) + 1 for l in range(L + 1)]
        as_index = lambda v: torch.tensor(v, dtype=torch.int64, device=device)  # noqa: E731
        return rows, as_index(pack), as_index(unpack), [len(b) for b in blocks]

    # ---------------------------------------------------------------- building blocks
    def rms_norm_eq(self, h, scale):
        """Per degree l: h / sqrt(mean_{m,c} h^2 + eps) * scale[l, c]. h [N, D, C]."""
        out = []
        for l in range(self.cfg.lmax + 1):
            hl = h[:, l * l:(l + 1) ** 2, :]
            rms = torch.sqrt(hl.pow(2).mean(dim=(1, 2), keepdim=True) + self.cfg.norm_eps)
            out.append(hl / rms * scale[l])
        return torch.cat(out, dim=1)

    def so2_linear(self, prefix, blocks, out_ch, with_gate):
        """SO(2) linear over packed blocks.

        blocks: {0: y0 [E, L+1, Cin], m: (y_plus, y_minus) each [E, L+1-m, Cin]}.
        Returns (same structure with out_ch channels, gate [E, L, out_ch] or None).
        """
        L = self.cfg.lmax
        y0 = blocks[0]
        z0 = y0.flatten(1) @ self.w(prefix + ".m0.weight").T + self.p(prefix + ".m0.bias")
        out = {0: z0[:, :(L + 1) * out_ch].view(-1, L + 1, out_ch)}
        gate = z0[:, (L + 1) * out_ch:].view(-1, L, out_ch) if with_gate else None
        for m in range(1, self.cfg.mmax + 1):
            yp, ym = blocks[m]
            wr, wi = self.w(prefix + f".m{m}.weight_r"), self.w(prefix + f".m{m}.weight_i")
            yp, ym = yp.flatten(1), ym.flatten(1)
            op = yp @ wr.T - ym @ wi.T
            om = yp @ wi.T + ym @ wr.T
            out[m] = (op.view(-1, L + 1 - m, out_ch), om.view(-1, L + 1 - m, out_ch))
        return out, gate

    def gate(self, blocks, gate):
        """l = 0 features -> SiLU; every l >= 1 coefficient (any m block) *= sigmoid(gate[l])."""
        g = torch.sigmoid(gate)                       # [E, L, C_h], index l-1
        b0 = blocks[0]
        out = {0: torch.cat([F.silu(b0[:, :1]), b0[:, 1:] * g], dim=1)}
        for m in range(1, self.cfg.mmax + 1):
            yp, ym = blocks[m]
            out[m] = (yp * g[:, m - 1:], ym * g[:, m - 1:])
        return out

    def interaction(self, t, h, species, edge_i, edge_j, bands, rbf, u):
        cfg = self.cfg
        pre = f"layers.{t}."
        # a. equivariant RMS norm
        n = self.rms_norm_eq(h, self.p(pre + "norm_scale"))
        # b-g. per-edge messages, aggregated into receivers
        E = edge_i.shape[0]
        agg = torch.zeros_like(h)
        if 0 < self.edge_chunk < E and torch.is_grad_enabled():
            for s in range(0, E, self.edge_chunk):
                part = slice(s, min(s + self.edge_chunk, E))
                args = (t, n, species, edge_i[part], edge_j[part], [b[part] for b in bands],
                        rbf[part], u[part])
                agg = agg + torch.utils.checkpoint.checkpoint(self.aggregated_messages, *args,
                                                              use_reentrant=False)
        else:
            msg = self.edge_messages(t, n, species, edge_i, edge_j, bands, rbf, u)
            agg = agg.index_add(0, edge_i, msg)
        h = h + agg / cfg.avg_neighbors
        # h. feed-forward
        return h + self.feed_forward(pre, h)

    def aggregated_messages(self, t, n, species, edge_i, edge_j, bands, rbf, u):
        """sum_{e into i} msg_e over the given edges, [N, D, C] (a checkpointed chunk)."""
        msg = self.edge_messages(t, n, species, edge_i, edge_j, bands, rbf, u)
        return torch.zeros_like(n).index_add(0, edge_i, msg)

    def edge_messages(self, t, n, species, edge_i, edge_j, bands, rbf, u):
        """Steps b-g for a set of edges: msg_e = u(r_e) unrot_e(w_e), [E, D, C]."""
        cfg = self.cfg
        L, M, C = cfg.lmax, cfg.mmax, cfg.channels
        pre = f"layers.{t}."
        E = edge_i.shape[0]
        # b. rotate into the edge frame (rows |m| <= min(l, mmax) only) and pack by m
        rows, pack, unpack, sizes = self.row_tables(n.device)
        ys = []
        for l in range(L + 1):
            nl = n[:, l * l:(l + 1) ** 2]
            x = torch.cat([nl[edge_j], nl[edge_i]], dim=-1)          # [E, 2l+1, 2C], sender first
            ys.append(bands[l] @ x)                                  # [E, 2k+1, 2C]
        packed = torch.cat(ys, dim=1)[:, pack].split(sizes, dim=1)    # block order
        blocks = {0: packed[0]}
        for m in range(1, M + 1):
            blocks[m] = (packed[2 * m - 1], packed[2 * m])
        # c. radial modulation, one multiplier per (block m, l, input channel)
        emb = self.p(pre + "edge_embedding")
        a = torch.cat([rbf, emb[species[edge_i]], emb[species[edge_j]]], dim=-1)
        a = F.silu(a @ self.p(pre + "radial.0.weight").T + self.p(pre + "radial.0.bias"))
        a = F.silu(a @ self.p(pre + "radial.1.weight").T + self.p(pre + "radial.1.bias"))
        g = a @ self.p(pre + "radial.2.weight").T + self.p(pre + "radial.2.bias")
        assert g.shape[1] == radial_out(cfg)
        off = 0
        for m in range(M + 1):
            size = (L + 1 - m) * 2 * C
            gm = g[:, off:off + size].view(E, L + 1 - m, 2 * C)
            off += size
            blocks[m] = blocks[0] * gm if m == 0 else (blocks[m][0] * gm, blocks[m][1] * gm)
        # d-f. SO(2) linear 1 with gate scalars, gate, SO(2) linear 2
        blocks, gate = self.so2_linear(pre + "so2_1", blocks, cfg.hidden_channels, True)
        blocks = self.gate(blocks, gate)
        blocks, _ = self.so2_linear(pre + "so2_2", blocks, C, False)
        # g. unpack, unrotate with the same band, envelope, aggregate into receivers
        w = torch.cat([blocks[0]] + [b for m in range(1, M + 1) for b in blocks[m]], dim=1)
        w = w[:, unpack].split(rows, dim=1)                            # per l: [E, 2k+1, C]
        msgs = [bands[l].transpose(1, 2) @ w[l] for l in range(L + 1)]   # [E, 2l+1, C]
        return torch.cat(msgs, dim=1) * u[:, None, None]

    def feed_forward(self, pre, h):
        L = self.cfg.lmax
        n = self.rms_norm_eq(h, self.p(pre + "ffn_norm_scale"))
        w1, w2 = self.p(pre + "ffn.lin1.weight"), self.p(pre + "ffn.lin2.weight")
        q = n[:, 0] @ self.p(pre + "ffn.gate.weight").T + self.p(pre + "ffn.gate.bias")
        q = torch.sigmoid(q.view(n.shape[0], L, -1))                     # [N, L, C_f]
        out = []
        for l in range(L + 1):
            a = n[:, l * l:(l + 1) ** 2] @ w1[l].T                        # [N, 2l+1, C_f]
            if l == 0:
                a = F.silu(a + self.p(pre + "ffn.lin1.bias"))
            else:
                a = a * q[:, l - 1:l]
            b = a @ w2[l].T                                              # [N, 2l+1, C]
            if l == 0:
                b = b + self.p(pre + "ffn.lin2.bias")
            out.append(b)
        return torch.cat(out, dim=1)

    def readout_energy(self, h, species):
        f = h[:, 0]
        f = f / torch.sqrt(f.pow(2).mean(dim=-1, keepdim=True) + self.cfg.norm_eps)
        f = f * self.p("readout.norm_scale")
        f = F.silu(f @ self.p("readout.0.weight").T + self.p("readout.0.bias"))
        e = (f @ self.p("readout.1.weight").T + self.p("readout.1.bias"))[:, 0]
        return e + self.e0.to(e.dtype)[species]

    # ---------------------------------------------------------------- forward
    def forward(self, species, edge_i, edge_j, edge_vec, roll=None):
        """Per-atom energies E_i [N] (eV).

        species [N] long (index into cfg.species); edge_i, edge_j [E] long (receiver, sender);
        edge_vec [E, 3] = x_j - x_i (+ image shift), Angstrom, in the model's dtype;
        roll: optional [E] extra roll angle of each edge frame (tests of roll invariance).
        """
        cfg = self.cfg
        N = species.shape[0]
        r = torch.linalg.norm(edge_vec, dim=-1)
        rbf, u = bessel_rbf(r, cfg.r_cut, cfg.n_rbf, cfg.envelope_p)
        bands = band_blocks(wigner_band(edge_vec, cfg.lmax, cfg.mmax, roll), cfg.lmax, cfg.mmax)
        emb = self.p("species_embedding")
        h = emb.new_zeros(N, cfg.num_coeffs, cfg.channels)
        h = torch.cat([emb[species][:, None, :], h[:, 1:]], dim=1)
        for t in range(cfg.layers):
            h = self.interaction(t, h, species, edge_i, edge_j, bands, rbf, u)
        return self.readout_energy(h, species)
