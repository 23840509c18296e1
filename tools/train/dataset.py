"""Reference data (tools/data/<element>.npz + .json, doc/data.md) as graphs for training.

Every frame becomes a graph once: species, receiver-sorted edges from edgeframe_ref's
neighbour search at the model cutoff, and the edge vectors r_e = x_j + S cell - x_i in float64.
Positions never change during training, so the edge vectors are all the model needs; forces
and virial come from dE/dr_e (doc/model.md step 5). Graphs are packed into flat tensors that
live on the training device; a batch is a concatenation of frames with shifted atom indices.
"""

import hashlib
import json
import pathlib

import numpy as np
import torch
from tqdm import tqdm

from edgeframe_ref.neighbors import neighbor_list

SPLITS = ("train", "val", "test")


def load_frames(datadir, element):
    """-> (arrays dict, meta dict, per-frame split list, per-frame family list)."""
    datadir = pathlib.Path(datadir)
    arrays = dict(np.load(datadir / f"{element}.npz"))
    meta = json.loads((datadir / f"{element}.json").read_text())
    trajs = meta["trajectories"]
    split = [trajs[t]["split"] for t in arrays["traj"]]
    family = [trajs[t]["family"] for t in arrays["traj"]]
    return arrays, meta, split, family


class PackedGraphs:
    """Frames of one split as flat tensors.

    atom-level: species [A], forces [A, 3]; edge-level: edge_i, edge_j [E] (frame-local atom
    indices), vec [E, 3] float64; frame-level: n_atoms, n_edges, atom_off, edge_off [F],
    energy [F], virial [F, 3, 3], composition [F, S].
    """

    def __init__(self, arrays, frame_ids, species_list, symbol, r_cut, desc="", lists=None):
        """lists: optional precomputed {frame: (i, j, shift)} (see neighbor_lists)."""
        n_atoms_all = arrays["n_atoms"]
        offs = np.concatenate([[0], np.cumsum(n_atoms_all)])
        if lists is None:
            lists = neighbor_lists(arrays, frame_ids, r_cut, desc)
        sp, fi, fj, vecs, forces, n_edges = [], [], [], [], [], []
        for f in frame_ids:
            pos = arrays["positions"][offs[f]:offs[f + 1]]
            cell = arrays["cell"][f]
            i, j, s = (torch.as_tensor(np.asarray(a, dtype=np.int64)) for a in lists[f])
            vec = pos[j.numpy()] - pos[i.numpy()] + s.numpy().astype(np.float64) @ cell
            fi.append(i)
            fj.append(j)
            vecs.append(torch.from_numpy(vec))
            n_edges.append(len(i))
            forces.append(torch.from_numpy(arrays["forces"][offs[f]:offs[f + 1]]))
            sp.append(torch.full((len(pos),), species_list.index(symbol), dtype=torch.int64))
        self.n_frames = len(frame_ids)
        self.frame_ids = np.asarray(frame_ids)
        self.n_atoms = torch.as_tensor(n_atoms_all[frame_ids], dtype=torch.int64)
        self.n_edges = torch.tensor(n_edges, dtype=torch.int64)
        self.atom_off = torch.cumsum(self.n_atoms, 0) - self.n_atoms
        self.edge_off = torch.cumsum(self.n_edges, 0) - self.n_edges
        self.species = torch.cat(sp)
        self.edge_i = torch.cat(fi)
        self.edge_j = torch.cat(fj)
        self.vec = torch.cat(vecs)
        self.forces = torch.cat(forces)
        self.energy = torch.as_tensor(arrays["energy"][frame_ids])
        self.virial = torch.as_tensor(arrays["virial"][frame_ids])
        comp = torch.zeros(self.n_frames, len(species_list), dtype=torch.float64)
        comp[:, species_list.index(symbol)] = self.n_atoms.to(torch.float64)
        self.composition = comp

    def to(self, device):
        for k, v in list(vars(self).items()):
            if isinstance(v, torch.Tensor):
                setattr(self, k, v.to(device))
        return self

    def mean_neighbors(self):
        return float(self.n_edges.sum()) / float(self.n_atoms.sum())

    def batch(self, idx):
        """Concatenate frames idx (a 1-d LongTensor of positions in this split) into one graph.

        Returns dict: species [N], edge_i, edge_j [E] (batch atom indices), vec [E, 3] float64,
        atom_frame [N], edge_frame [E] (0..B-1), n_atoms [B], energy [B], forces [N, 3],
        virial [B, 3, 3].
        """
        dev = self.species.device
        idx = idx.to(dev)
        na, ne = self.n_atoms[idx], self.n_edges[idx]
        B = idx.numel()
        # gather index ranges without a Python loop over frames
        atom_frame = torch.repeat_interleave(torch.arange(B, device=dev), na)
        edge_frame = torch.repeat_interleave(torch.arange(B, device=dev), ne)
        new_atom_off = torch.cumsum(na, 0) - na
        new_edge_off = torch.cumsum(ne, 0) - ne
        atom_src = self.atom_off[idx][atom_frame] + \
            (torch.arange(atom_frame.numel(), device=dev) - new_atom_off[atom_frame])
        edge_src = self.edge_off[idx][edge_frame] + \
            (torch.arange(edge_frame.numel(), device=dev) - new_edge_off[edge_frame])
        shift = new_atom_off[edge_frame]
        return dict(species=self.species[atom_src], edge_i=self.edge_i[edge_src] + shift,
                    edge_j=self.edge_j[edge_src] + shift, vec=self.vec[edge_src],
                    atom_frame=atom_frame, edge_frame=edge_frame, n_atoms=na,
                    energy=self.energy[idx], forces=self.forces[atom_src],
                    virial=self.virial[idx])


def neighbor_lists(arrays, frame_ids, r_cut, desc=""):
    """{frame: (i int16, j int16, shift int8)} from edgeframe_ref's neighbour search."""
    offs = np.concatenate([[0], np.cumsum(arrays["n_atoms"])])
    out = {}
    for f in tqdm(frame_ids, desc=f"neighbours {desc}", unit="frame", dynamic_ncols=True,
                  disable=None):
        pos = arrays["positions"][offs[f]:offs[f + 1]]
        i, j, s = neighbor_list(pos, arrays["cell"][f], (True, True, True), r_cut)
        # compact storage; the cells are small
        assert len(pos) < 2 ** 15 and (s.numel() == 0 or int(s.abs().max()) < 2 ** 7)   # an isolated atom has no edge
        out[f] = (i.numpy().astype(np.int16), j.numpy().astype(np.int16),
                  s.numpy().astype(np.int8))
    return out


def build_splits(datadir, element, species_list, r_cut, cache_dir=None):
    """{split: PackedGraphs, "meta": data set metadata}; each split has .family and
    .trajectory (the trajectory's name) per frame.

    With cache_dir, the neighbour lists (compact: int16 atom indices, int8 image shifts) are
    stored in an .npz keyed by the data's digest and r_cut, so a run on another machine
    (e.g. the GPU box) skips the neighbour search; edge vectors are re-formed from the data.
    """
    datadir = pathlib.Path(datadir)
    key = hashlib.sha256((datadir / f"{element}.npz").read_bytes()).hexdigest()[:16]
    arrays, meta, split, family = load_frames(datadir, element)
    lists = None
    cache = None
    if cache_dir is not None:
        cache = pathlib.Path(cache_dir) / f"{element}-{key}-rc{r_cut:g}.npz"
        if cache.exists():
            with np.load(cache) as z:          # each z[key] decompresses: read once
                n_e, ci, cj, cs = z["n_edges"], z["i"], z["j"], z["shift"]
            off = np.concatenate([[0], np.cumsum(n_e)])
            lists = {f: (ci[off[f]:off[f + 1]], cj[off[f]:off[f + 1]], cs[off[f]:off[f + 1]])
                     for f in range(len(n_e))}
    if lists is None:
        lists = neighbor_lists(arrays, range(len(arrays["energy"])), r_cut, element)
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            frames = range(len(lists))
            np.savez_compressed(cache, n_edges=np.array([len(lists[f][0]) for f in frames]),
                                i=np.concatenate([lists[f][0] for f in frames]),
                                j=np.concatenate([lists[f][1] for f in frames]),
                                shift=np.concatenate([lists[f][2] for f in frames]))
    out = {}
    for name in SPLITS:
        ids = [f for f, s in enumerate(split) if s == name]
        g = PackedGraphs(arrays, ids, species_list, element, r_cut, lists=lists)
        g.family = [family[f] for f in ids]
        g.trajectory = [meta["trajectories"][t]["name"] for t in arrays["traj"][ids]]
        out[name] = g
    out["meta"] = meta
    return out
