"""Energy, forces, virial and per-atom virial of a structure (doc/model.md step 5).

Geometry stays in float64: edge vectors are formed in float64 and cast to the model dtype;
dE/dr_e comes back from one autograd pass and is accumulated in float64:
    F_i += dE/dr_e, F_j -= dE/dr_e          (r_e = x_j - x_i, so dr_e/dx_j = +1)
    W   = -sum_e r_e (x) dE/dr_e            (W_ab = -sum_e r_e,a dE/dr_e,b)
    W_i = W_j += -1/2 r_e (x) dE/dr_e      (per-atom virial, half to each end)
"""

import numpy as np
import torch

from .neighbors import edge_vectors, neighbor_list


def species_indices(model, symbols):
    species = model.cfg.species
    missing = sorted(set(symbols) - set(species))
    if missing:
        raise ValueError(f"model has no element {', '.join(missing)} (it has: {', '.join(species)})")
    return torch.tensor([species.index(s) for s in symbols], dtype=torch.int64)


def build_edges(model, atoms):
    return neighbor_list(atoms.positions, atoms.cell, atoms.pbc, model.cfg.r_cut)


def evaluate(model, atoms, edges=None, roll=None, want_virial=True, forces=True):
    """Returns dict of float64 numpy arrays: energy, energies [N], forces [N, 3],
    virial [3, 3], atom_virial [N, 3, 3], plus the edges (i, j, shift) used. A model v2 whose
    system inputs are not set yet gets the default task, charge and spin and this structure's
    composition (set_system); set them first for another task or another composition."""
    param = next(model.parameters())
    dtype, device = param.dtype, param.device
    if edges is None:
        edges = build_edges(model, atoms)
    i, j, shift = (t.to(device) for t in edges)
    pos = torch.as_tensor(atoms.positions, dtype=torch.float64, device=device)
    vec64 = edge_vectors(pos, atoms.cell, i, j, shift)
    vec = vec64.to(dtype).detach().requires_grad_(forces)
    species = species_indices(model, atoms.symbols).to(device)
    if hasattr(model, "set_system"):  # model v2 takes atomic numbers (species index = Z - 1)
        species = species + 1
        if model.system is None:
            model.set_system(species.cpu())
    if roll is not None:
        roll = torch.as_tensor(roll, dtype=dtype, device=device)
    energies = model(species, i, j, vec, roll=roll)
    energy = energies.to(torch.float64).sum()
    out = {"energy": energy.item(), "energies": energies.detach().double().cpu().numpy(),
           "edges": (i.cpu(), j.cpu(), shift.cpu())}
    if not forces:
        return out
    (grad,) = torch.autograd.grad(energies.sum(), vec, allow_unused=True)
    g = torch.zeros_like(vec64) if grad is None else grad.to(torch.float64)   # None: no edges
    n = len(atoms)
    f = torch.zeros(n, 3, dtype=torch.float64, device=device)
    f.index_add_(0, i, g).index_add_(0, j, -g)
    out["forces"] = f.cpu().numpy()
    if want_virial:
        w_e = -vec64[:, :, None] * g[:, None, :]                   # [E, 3, 3]
        out["virial"] = w_e.sum(0).cpu().numpy()
        wa = torch.zeros(n, 3, 3, dtype=torch.float64, device=device)
        wa.index_add_(0, i, 0.5 * w_e).index_add_(0, j, 0.5 * w_e)
        out["atom_virial"] = wa.cpu().numpy()
    return out


def energy_only(model, atoms, roll=None):
    return evaluate(model, atoms, roll=roll, forces=False)["energy"]
