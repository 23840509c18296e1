"""Small structure builders (no ASE dependency): diamond, bcc, a triclinic two-species cell,
an open cluster with edges exactly along the axes. Positions and cells in Angstrom, cell rows
are the lattice vectors. Randomness from a seeded torch.Generator (CPU)."""

import dataclasses
import itertools

import numpy as np
import torch


@dataclasses.dataclass
class Atoms:
    positions: np.ndarray          # [N, 3] float64, Angstrom
    cell: np.ndarray               # [3, 3] float64, rows = lattice vectors (zeros if open)
    pbc: tuple                     # 3 bools
    symbols: list                  # N element symbols

    def __len__(self):
        return len(self.symbols)

    def copy(self):
        return Atoms(self.positions.copy(), self.cell.copy(), tuple(self.pbc), list(self.symbols))


def _replicate(basis, a, reps, symbol):
    basis = np.asarray(basis, dtype=np.float64)
    cells = np.array(list(itertools.product(*[range(r) for r in reps])), dtype=np.float64)
    pos = (cells[:, None, :] + basis[None, :, :]).reshape(-1, 3) * a
    cell = np.diag(np.asarray(reps, dtype=np.float64) * a)
    return Atoms(pos, cell, (True, True, True), [symbol] * len(pos))


def diamond(reps=(2, 2, 2), a=3.567, symbol="C"):
    """Cubic diamond, 8 atoms per conventional cell (a = 3.567 A for carbon)."""
    fcc = [[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]]
    basis = fcc + [[x + 0.25, y + 0.25, z + 0.25] for x, y, z in fcc]
    return _replicate(basis, a, reps, symbol)


def bcc(reps=(3, 3, 3), a=2.87, symbol="Cu"):
    """bcc, 2 atoms per cubic cell. a = 2.87 A gives bcc Cu the atomic volume of fcc Cu."""
    return _replicate([[0, 0, 0], [0.5, 0.5, 0.5]], a, reps, symbol)


def rattle(atoms, sigma, seed):
    """Gaussian displacements of standard deviation sigma (Angstrom) per component."""
    gen = torch.Generator().manual_seed(seed)
    out = atoms.copy()
    out.positions = out.positions + sigma * torch.randn(
        len(atoms), 3, dtype=torch.float64, generator=gen).numpy()
    return out


def random_cell(cell, symbols, min_dist, seed, max_tries=100000):
    """Random positions in a periodic cell with all image distances >= min_dist."""
    cell = np.asarray(cell, dtype=np.float64)
    gen = torch.Generator().manual_seed(seed)
    images = np.array(list(itertools.product((-1, 0, 1), repeat=3)), dtype=np.float64) @ cell
    frac = []
    for _ in range(max_tries):
        if len(frac) == len(symbols):
            break
        f = torch.rand(3, dtype=torch.float64, generator=gen).numpy()
        x = f @ cell
        ok = all(np.min(np.linalg.norm(g @ cell + images - x, axis=1)) >= min_dist for g in frac)
        if ok:
            frac.append(f)
    if len(frac) != len(symbols):
        raise RuntimeError("could not place atoms; lower min_dist")
    return Atoms(np.array(frac) @ cell, cell, (True, True, True), list(symbols))


def triclinic_two_species(seed=3):
    """16 atoms (8 C, 8 Cu) in a skewed triclinic cell with all angles off 90 degrees."""
    cell = [[6.3, 0.0, 0.0], [1.7, 6.0, 0.0], [-1.2, 0.9, 6.1]]
    symbols = ["C", "Cu"] * 8
    return random_cell(cell, symbols, min_dist=1.8, seed=seed)


def axis_cluster(a=1.7):
    """Open cluster: an atom at the origin, six on the +-x, +-y, +-z axes (edges exactly along
    the axes, including n = +-y which is deep in chart 2), a second shell on +x and +y, and two
    off-axis atoms."""
    pos = [[0, 0, 0],
           [a, 0, 0], [-a, 0, 0], [0, a, 0], [0, -a, 0], [0, 0, a], [0, 0, -a],
           [2 * a, 0, 0], [0, 2 * a, 0],
           [1.3, 1.1, -1.4], [-1.2, -1.5, 1.35]]
    symbols = ["C", "Cu", "C", "Cu", "C", "Cu", "C", "C", "Cu", "Cu", "C"]
    return Atoms(np.array(pos, dtype=np.float64), np.zeros((3, 3)), (False, False, False),
                 symbols)


def replicas_for(target, basis_count):
    """Near-cubic replication (a, b, c), a <= b <= c <= a + 1, closest to target atoms."""
    best = None
    n = max(1, round((target / basis_count) ** (1 / 3)))
    for a in range(max(1, n - 2), n + 3):
        for b in (a, a + 1):
            for c in (b, a + 1):
                if c < b:
                    continue
                count = a * b * c * basis_count
                key = (abs(count - target), count)
                if best is None or key < best[0]:
                    best = (key, (a, b, c))
    return best[1]
