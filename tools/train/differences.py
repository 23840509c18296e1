"""Energy differences against a perfect-crystal anchor (train.py --energy-difference).

A stacking fault, a surface or a vacancy costs a few meV/atom over the perfect crystal in the
cell that holds it; a model whose per-atom energies are each within the data set's error of the
reference can still get that difference wrong by more than its size (copper v2: perfect fcc
0.33 meV/atom above EAM, the 9-layer fault cell 0.74 below, an intrinsic fault of -61 %;
potentials/README.md). This term fits the difference itself: for a frame f of a named family
with n_f atoms and the anchor frame a (the first frame of one trajectory, e.g. the perfect
lattice at a0) with n_a atoms,

    r_f = [(E_f - n_f / n_a E_a) - (E_f,ref - n_f / n_a E_a,ref)] / n_f        (eV/atom)

and the loss adds w_energy * mean(W_f r_f^2), W_f the family's weight, over a random draw of
--difference-batch of those frames each step (the anchor every step). It needs energies only
(no forces): one forward and backward pass over the drawn frames per step.
"""

import torch


def anchor_position(graphs, name):
    """Position in `graphs` (a training split) of the first frame of trajectory `name`."""
    for k, t in enumerate(graphs.trajectory):
        if t == name:
            return k
    names = sorted(set(graphs.trajectory))
    raise SystemExit(f"--difference-anchor {name}: the training split has no trajectory of that name "
                     f"(e.g. {', '.join(names[:6])}{', ...' if len(names) > 6 else ''})")


def residuals(e_frames, e_ref, n_frames, e_anchor, e_anchor_ref, n_anchor):
    """r_f (eV/atom, float64) of the module docstring; e_* [F] or scalars, n_* atom counts."""
    n = n_frames.to(torch.float64)
    scale = n / float(n_anchor)
    return ((e_frames - scale * e_anchor) - (e_ref - scale * e_anchor_ref)) / n


def frame_energies(model, b):
    """Total energies [B] (float64) of a batch, energies only."""
    dtype = next(model.parameters()).dtype
    e_atom = model(b["species"], b["edge_i"], b["edge_j"], b["vec"].to(dtype))
    B = b["n_atoms"].numel()
    return torch.zeros(B, dtype=torch.float64, device=e_atom.device).index_add(
        0, b["atom_frame"], e_atom.to(torch.float64))


class EnergyDifferences:
    """The frames of the named families in one split and the anchor (from the training split):
    loss(model) for training, rmse(model) in meV/atom for the metrics."""

    def __init__(self, split, anchor_split, anchor_pos, factors):
        self.positions = torch.tensor([k for k, f in enumerate(split.family) if f in factors], dtype=torch.long)
        self.weights = torch.tensor([factors[split.family[k]] for k in self.positions.tolist()],
                                    dtype=torch.float64)
        self.split, self.anchor = split, anchor_split.batch(torch.tensor([anchor_pos]))

    def __len__(self):
        return int(self.positions.numel())

    def _residuals(self, model, positions=None):
        b = self.split.batch(self.positions if positions is None else positions)
        e = frame_energies(model, b)
        e_a = frame_energies(model, self.anchor)[0]
        return residuals(e, b["energy"], b["n_atoms"], e_a, self.anchor["energy"][0],
                         int(self.anchor["n_atoms"][0]))

    def loss(self, model, draw=0, generator=None):
        """mean(W_f r_f^2) over `draw` frames drawn without replacement (all when draw is 0 or at
        least their number), with a graph for backward."""
        pick = torch.arange(len(self))
        if 0 < draw < len(self):
            pick = torch.randperm(len(self), generator=generator)[:draw]
        r = self._residuals(model, self.positions[pick])
        return (self.weights[pick].to(r.device) * r.pow(2)).mean()

    def rmse_and_loss(self, model):
        """(RMSE of r_f in meV/atom, the weighted mean square in (eV/atom)^2) without a graph."""
        with torch.no_grad():
            r = self._residuals(model)
        w = self.weights.to(r.device)
        return 1e3 * float(r.pow(2).mean().sqrt()), float((w * r.pow(2)).mean())
