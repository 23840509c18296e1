"""Structures of the validation suite, in numpy (no ASE): bulk crystals, oriented slabs, a
vacancy cell, the tilted-cell intrinsic stacking fault, a random liquid start.

Cells are 3x3 arrays whose rows are the box vectors in LAMMPS' restricted-triclinic form
(a = (lx, 0, 0), b = (xy, ly, 0), c = (xz, yz, lz)), Angstrom; positions [N, 3] Angstrom.
"""
import itertools
import pathlib
import sys

import numpy as np

sys.path.append(str(pathlib.Path(__file__).resolve().parents[1]))
from datagen.lammps_driver import close_packed_positions  # noqa: E402

FCC = [[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]]
# conventional cubic cell, fractions of a
BASES = {"diamond": FCC + [[x + 0.25, y + 0.25, z + 0.25] for x, y, z in FCC],
         "fcc": FCC, "bcc": [[0, 0, 0], [0.5, 0.5, 0.5]]}
# primitive cell (rows, units of a) and its basis (Cartesian, units of a) for the phonons
PRIMITIVE = {"diamond": ([[0, .5, .5], [.5, 0, .5], [.5, .5, 0]], [[0, 0, 0], [.25, .25, .25]]),
             "fcc": ([[0, .5, .5], [.5, 0, .5], [.5, .5, 0]], [[0, 0, 0]]),
             "bcc": ([[-.5, .5, .5], [.5, -.5, .5], [.5, .5, -.5]], [[0, 0, 0]])}
# surface orientations: (x, y, z) axes, z = surface normal
ORIENT = {"100": ((1, 0, 0), (0, 1, 0), (0, 0, 1)),
          "110": ((0, 0, 1), (1, -1, 0), (1, 1, 0)),
          "111": ((1, -1, 0), (1, 1, -2), (1, 1, 1))}
AVOGADRO = 6.02214076e23


def bulk(lattice, a, reps):
    """Perfect crystal: reps^3 (or reps = (nx, ny, nz)) conventional cubic cells."""
    reps = (reps,) * 3 if np.isscalar(reps) else tuple(reps)
    basis = np.asarray(BASES[lattice], dtype=np.float64)
    cells = np.array(list(itertools.product(*(range(n) for n in reps))), dtype=np.float64)
    pos = ((cells[:, None, :] + basis[None]) * a).reshape(-1, 3)
    return pos, np.diag(np.asarray(reps, dtype=np.float64) * a)


def is_translation(lattice, v):
    """v (units of a, cubic axes): a translation of the Bravais lattice of `lattice`?"""
    v = np.asarray(v, dtype=np.float64)
    if lattice == "bcc":
        return bool(np.allclose(v, np.round(v)) or np.allclose(v - 0.5, np.round(v - 0.5)))
    h = 2 * v                                    # fcc (and diamond): half-integers, even sum
    return bool(np.allclose(h, np.round(h)) and round(h.sum()) % 2 == 0)


def period(lattice, direction):
    """Shortest lattice translation along the integer direction [hkl], units of a."""
    d = np.asarray(direction, dtype=np.float64)
    for s in (0.5, 1.0, 2.0):
        if is_translation(lattice, s * d):
            return s * float(np.linalg.norm(d))
    raise ValueError(f"no period found along {direction} for {lattice}")


def oriented(lattice, a, axes, reps):
    """Crystal with x, y, z along the integer directions `axes` (mutually orthogonal), reps
    periods along each; an orthogonal box. Returns positions, cell."""
    rot = np.array([np.asarray(v, float) / np.linalg.norm(v) for v in axes])   # rows: new axes
    lengths = np.array([period(lattice, v) * n for v, n in zip(axes, reps)]) * a
    basis = np.asarray(BASES[lattice], dtype=np.float64)
    span = int(np.ceil(lengths.max() / a * 1.8)) + 1
    rng = range(-span, span + 1)
    cells = np.array(list(itertools.product(rng, rng, rng)), dtype=np.float64)
    pos = ((cells[:, None, :] + basis[None]) * a).reshape(-1, 3) @ rot.T
    eps = 1e-6
    keep = np.all((pos > -eps) & (pos < lengths - eps), axis=1)
    pos = pos[keep]
    expected = len(basis) / a ** 3 * np.prod(lengths)
    if abs(len(pos) - expected) > 1e-6:
        raise RuntimeError(f"oriented {lattice} {axes}: {len(pos)} atoms, expected {expected}")
    return pos, np.diag(lengths)


def slab(lattice, a, hkl, reps, vacuum):
    """Slab with the surface normal along z: `reps` periods (nx, ny, nz), `vacuum` Angstrom of
    empty space added along z (periodic box). The cut is placed in the middle of the widest gap
    between atomic layers (diamond (111): between bilayers, one dangling bond per surface atom).
    Returns positions, cell, surface area of one face (A^2)."""
    pos, cell = oriented(lattice, a, ORIENT[hkl], reps)
    lz = cell[2, 2]
    z = np.unique(np.round(pos[:, 2] % lz, 6))
    gaps = np.diff(np.append(z, z[0] + lz))
    k = int(np.argmax(gaps))
    cut = z[k] + gaps[k] / 2
    pos = pos.copy()
    pos[:, 2] = (pos[:, 2] - cut) % lz + vacuum / 2
    cell = cell.copy()
    cell[2, 2] = lz + vacuum
    return pos, cell, float(cell[0, 0] * cell[1, 1])


def stacking_fault(a, reps):
    """fcc with z along [111], y along [11-2], reps = (nx, ny, nz) periods (3 (111) layers per
    period along z): perfect cell and the cell whose c vector is tilted by the Shockley partial
    a/6 [11-2] (length a / sqrt 6) along y, which makes one intrinsic stacking fault per
    period of the cell. The sign of the tilt is chosen so that the layers across the boundary
    do not sit on top of each other. Returns (pos, cell perfect), (pos, cell faulted), area."""
    pos, cell = oriented("fcc", a, ORIENT["111"], reps)
    b = a / 6 ** 0.5
    lz = cell[2, 2]
    z = np.round(pos[:, 2], 6)
    bottom, top = pos[z == z.min()], pos[z == z.max()]
    for sign in (+1, -1):
        c = np.array([0.0, sign * b, lz])
        img = bottom + c
        d = img[:, None, :2] - top[None, :, :2]
        d -= np.round(d / np.diag(cell)[:2]) * np.diag(cell)[:2]
        lateral = np.sqrt((d ** 2).sum(-1)).min()
        if lateral > 0.1 * a:
            # with the tilted c, the layer above the top one must not repeat the one below the
            # top either (that would be the on-top position or the perfect crystal)
            second = pos[z == np.unique(z)[-2]]
            d2 = img[:, None, :2] - second[None, :, :2]
            d2 -= np.round(d2 / np.diag(cell)[:2]) * np.diag(cell)[:2]
            if np.sqrt((d2 ** 2).sum(-1)).min() < 1e-6:
                faulted = cell.copy()
                faulted[2] = c
                return (pos, cell), (pos.copy(), faulted), float(cell[0, 0] * cell[1, 1])
    raise RuntimeError("no tilt gives an intrinsic stacking fault")


def stacked(a, sequence, reps):
    """Close-packed layers in the stacking order `sequence` ("ABC" fcc, "AB" ideal hcp) at the
    fcc crystal's spacings for lattice constant a; the geometry of the training data's polytypes
    (datagen.lammps_driver.close_packed_positions), reps = (nx, ny, nz)."""
    positions, lengths = close_packed_positions(a, sequence, reps)
    return np.array(positions), np.diag(lengths)


def box_for_density(natoms, mass, rho):
    """Cubic box edge (A) for natoms of `mass` (g/mol) at density rho (g/cm^3)."""
    return (natoms * mass / AVOGADRO / rho * 1e24) ** (1.0 / 3.0)


def random_liquid(natoms, box, min_dist, seed):
    """natoms at random in a cubic box (periodic), no pair closer than min_dist."""
    rng = np.random.default_rng(seed)
    pos = np.zeros((0, 3))
    tries = 0
    while len(pos) < natoms:
        tries += 1
        if tries > 1000 * natoms:
            raise RuntimeError(f"cannot place {natoms} atoms {min_dist} A apart in {box} A")
        x = rng.random(3) * box
        d = pos - x
        d -= box * np.round(d / box)
        if len(pos) == 0 or np.sqrt((d ** 2).sum(1)).min() >= min_dist:
            pos = np.vstack([pos, x])
    return pos, np.eye(3) * box


def random_pattern(n, seed):
    """[n, 3] random directions of unit r.m.s. length (a fixed displacement pattern)."""
    u = np.random.default_rng(seed).standard_normal((n, 3))
    return u / np.sqrt((u ** 2).sum(1).mean())


def write_data(path, positions, cell, mass):
    """LAMMPS data file (atom_style atomic, one type), restricted-triclinic cell, origin 0."""
    cell = np.asarray(cell, dtype=np.float64)
    if abs(cell[0, 1]) + abs(cell[0, 2]) + abs(cell[1, 2]) > 0:
        raise ValueError("cell must be lower triangular (LAMMPS restricted triclinic)")
    tri = abs(cell[1, 0]) + abs(cell[2, 0]) + abs(cell[2, 1]) > 0
    c = cell.tolist()                                  # Python floats: repr is the exact value
    lines = ["edgeframe validate", "", f"{len(positions)} atoms", "1 atom types",
             f"0 {c[0][0]!r} xlo xhi", f"0 {c[1][1]!r} ylo yhi", f"0 {c[2][2]!r} zlo zhi"]
    if tri:
        lines.append(f"{c[1][0]!r} {c[2][0]!r} {c[2][1]!r} xy xz yz")
    lines += ["", "Masses", "", f"1 {mass}", "", "Atoms # atomic", ""]
    # wrap into the box (fractional coordinates mod 1) so read_data never drops an atom
    frac = np.asarray(positions, dtype=np.float64) @ np.linalg.inv(cell)
    frac -= np.floor(frac)
    pos = frac @ cell
    lines += [f"{k + 1} 1 {float(x)!r} {float(y)!r} {float(z)!r}" for k, (x, y, z) in enumerate(pos)]
    pathlib.Path(path).write_text("\n".join(lines) + "\n")
