"""Run one LAMMPS trajectory as a subprocess and read its frames back.

A trajectory is built, thermalised and sampled entirely inside one LAMMPS input (lattice,
orient, create_atoms, change_box, delete_atoms, velocity / fix langevin seeds), so a given
recipe gives the same frames on every run of the same LAMMPS build on one process.

Per frame we read (metal units):
  positions [N, 3] Angstrom (dump x y z, wrapped, Cartesian), forces [N, 3] eV/A (the
  potential's own forces, through fix store/force: dump fx would include langevin's forces),
  cell [3, 3] rows a = (lx, 0, 0), b = (xy, ly, 0), c = (xz, yz, lz) (thermo),
  energy eV (thermo pe, norm no), virial [3, 3] eV.
Virial: `compute pressure NULL virial` gives P_ab = W_ab / V * nktv2p (bar) with LAMMPS'
W_ab = sum r_a f_b; we store W = P V / nktv2p (eV), nktv2p = 1.6021765e6 bar A^3 / eV (metal).
That W is doc/model.md's W = -sum_e r_e (x) dE/dr_e (checked by finite differences of LAMMPS
energies under strain, see check_conventions.py and doc/data.md).
"""

import os
import pathlib
import re
import subprocess
import tempfile

import numpy as np

NKTV2P = 1.6021765e6                 # LAMMPS metal units: bar * A^3 / eV (force.cpp)
LMP = os.environ.get("LMP", "lmp")

THERMO_COLS = ["step", "temp", "pe", "lx", "ly", "lz", "xy", "xz", "yz", "vol",
               "c_vir[1]", "c_vir[2]", "c_vir[3]", "c_vir[4]", "c_vir[5]", "c_vir[6]"]


def close_packed_positions(a, sequence, reps):
    """Close-packed layers in the stacking order `sequence` (letters A, B, C: "ABC" is fcc,
    "AB" ideal hcp) at the nearest-neighbour distance and layer spacing of the fcc crystal of
    lattice constant a (so hcp has the ideal c/a): x along a close-packed row (period
    d = a / sqrt 2), y across it (period sqrt(3) d), z normal to the layers; four atoms per
    layer and (x, y) period; reps = (nx, ny, nz) repeats the cell in x, y and the sequence in z.
    Returns ([(x, y, z)] in Angstrom, (lx, ly, lz)): an orthogonal periodic box.
    One definition for the training data's `stack` structures and tools/validate's polytypes."""
    nx, ny, nz = reps
    d = a / 2 ** 0.5
    ry, h = 3 ** 0.5 * d, a / 3 ** 0.5
    shift = {"A": (0.0, 0.0), "B": (0.5 * d, ry / 6), "C": (0.0, ry / 3)}
    layers = sequence * nz
    lx, ly = 2 * nx * d, ny * ry
    positions = [((i * d + bx + shift[c][0]) % lx, (j * ry + by + shift[c][1]) % ly, k * h)
                 for k, c in enumerate(layers) for i in range(2 * nx) for j in range(ny)
                 for bx, by in ((0.0, 0.0), (0.5 * d, 0.5 * ry))]
    return positions, (lx, ly, len(layers) * h)


def potential_block(pot):
    """pot: dict(style, file, element, mass) -> pair_style / pair_coeff lines."""
    path = pathlib.Path(os.environ["LAMMPS_POTENTIALS"]) / pot["file"]
    return (f"mass 1 {pot['mass']}\n"
            f"pair_style {pot['style']}\n"
            f"pair_coeff * * {path} {pot['element']}\n")


def structure_block(s):
    """LAMMPS commands that create the initial configuration of recipe structure `s`."""
    kind = s["kind"]
    lines = []
    if kind in ("bulk", "slab"):
        orient = s.get("orient", ((1, 0, 0), (0, 1, 0), (0, 0, 1)))
        o = " ".join(f"orient {ax} {v[0]} {v[1]} {v[2]}" for ax, v in zip("xyz", orient))
        nx, ny, nz = s["reps"]
        # LAMMPS takes the spacings of an oriented lattice from the rotated unit cube's bounding
        # box, which need not be a period of the crystal (x [1-10], y [11-2]: 1.633 a along y,
        # period 1.2247 a): recipes give the true periods, in units of a, where they differ
        if "spacing" in s:
            o += " spacing " + " ".join(f"{v:.12f}" for v in s["spacing"])
        lines += [f"lattice {s['lattice']} {s['a']} {o}",
                  f"region box block 0 {nx} 0 {ny} 0 {nz} units lattice",
                  "create_box 1 box", "create_atoms 1 box"]
        if "shift_z" in s:
            # rigid shift (atoms wrap periodically) so that the vacuum cuts where the recipe wants
            lines.append(f"displace_atoms all move 0 0 {s['shift_z']} units box")
        if kind == "slab":
            # vacuum along z: box grows, atoms stay (two free surfaces normal to z)
            lines.append(f"change_box all z delta 0 {s['vacuum']} units box")
    elif kind == "random":
        L = s["box"]
        lines += [f"region box block 0 {L} 0 {L} 0 {L} units box", "create_box 1 box",
                  f"create_atoms 1 random {s['natoms']} {s['seed']} NULL "
                  f"overlap {s['overlap']} maxtry 1000"]
    elif kind == "stack":
        positions, (lx, ly, lz) = close_packed_positions(s["a"], s["sequence"], s["reps"])
        lines += [f"region box block 0 {lx!r} 0 {ly!r} 0 {lz!r} units box", "create_box 1 box"]
        lines += [f"create_atoms 1 single {x!r} {y!r} {z!r} units box" for x, y, z in positions]
    elif kind == "atoms":
        # explicit positions (A) in a cubic box of edge `box` (isolated atom, dimers)
        L = s["box"]
        lines += [f"region box block 0 {L} 0 {L} 0 {L} units box", "create_box 1 box"]
        lines += [f"create_atoms 1 single {x!r} {y!r} {z!r} units box" for x, y, z in s["positions"]]
    else:
        raise ValueError(f"unknown structure kind {kind!r}")
    if s.get("delete_ids"):
        # vacancies; ids renumbered 1..N afterwards (velocity create needs consecutive ids)
        ids = " ".join(str(i) for i in s["delete_ids"])
        lines += [f"group vac id {ids}", "delete_atoms group vac compress yes", "group vac delete"]
    scale = s.get("scale")
    if scale is not None:
        sx, sy, sz = scale if isinstance(scale, (list, tuple)) else (scale,) * 3
        lines.append(f"change_box all x scale {sx} y scale {sy} z scale {sz} remap")
    tilt = s.get("tilt")
    if tilt is not None:
        # tilt = (xy, xz, yz) as fractions of ly, lz, lz: simple shears of the cell and atoms
        lines.append("change_box all triclinic")
        lines.append(f"variable txy equal {tilt[0]}*ly")
        lines.append(f"variable txz equal {tilt[1]}*lz")
        lines.append(f"variable tyz equal {tilt[2]}*lz")
        lines.append("change_box all xy final ${txy} xz final ${txz} yz final ${tyz} remap units box")
    fault = s.get("fault_yz")
    if fault is not None:
        # tilt c by `fault_yz` A along y WITHOUT moving the atoms: the crystal meets its shifted
        # periodic image at the z boundary (fcc (111) stacking along z: a/sqrt(6) gives one
        # intrinsic stacking fault per cell)
        lines.append("change_box all triclinic")
        lines.append(f"change_box all yz final {fault!r} units box")
    return "\n".join(lines) + "\n"


def md_input(recipe, pot):
    md = recipe["md"]
    t0, t1 = md["T"], md.get("T_end", md["T"])
    equil, every, frames = md["equil"], md["every"], md["frames"]
    return "\n".join([
        "units metal", "atom_style atomic", "boundary p p p", "atom_modify map array",
        structure_block(recipe["structure"]),
        potential_block(pot),
        "neighbor 1.0 bin", "neigh_modify every 1 delay 0 check yes",
        "compute vir all pressure NULL virial",
        "thermo_style custom " + " ".join(THERMO_COLS),
        "thermo_modify norm no format float %.17g lost error",
        f"timestep {md['dt']}",
        f"velocity all create {md.get('T_init', t0)} {md['seed']} mom yes rot no dist gaussian",
        # store/force, defined before langevin, keeps the potential's forces only: langevin
        # adds its drag and noise to f in post_force, before dump would read f
        "fix nve all nve", "fix sf all store/force",
        f"fix lang all langevin {md.get('T_init', t0)} {t0} {md['damp']} {md['seed'] + 1} zero yes",
        f"thermo {equil}",
        f"run {equil}",
        "unfix lang",
        f"fix lang all langevin {t0} {t1} {md['damp']} {md['seed'] + 2} zero yes",
        f"dump d all custom {every} dump.txt id type x y z f_sf[1] f_sf[2] f_sf[3]",
        "dump_modify d sort id format float %.17g",
        f"thermo {every}",
        f"run {every * frames}",
        ""])


def parse_dump(path):
    frames = {}
    with open(path) as fh:
        lines = fh.read().split("\n")
    k = 0
    while k < len(lines):
        if lines[k].startswith("ITEM: TIMESTEP"):
            step = int(lines[k + 1])
            n = int(lines[k + 3])
            head = lines[k + 8].split()[2:]
            rows = np.array([[float(v) for v in lines[k + 9 + a].split()] for a in range(n)])
            col = {name: c for c, name in enumerate(head)}
            force_cols = ["fx", "fy", "fz"] if "fx" in col else ["f_sf[1]", "f_sf[2]", "f_sf[3]"]
            frames[step] = dict(ids=rows[:, col["id"]].astype(int),
                                positions=rows[:, [col["x"], col["y"], col["z"]]],
                                forces=rows[:, [col[f] for f in force_cols]])
            k += 9 + n
        else:
            k += 1
    return frames


def parse_thermo(path):
    """{step: {column: value}} from every thermo table in a LAMMPS log."""
    out = {}
    table = None
    for line in open(path):
        words = line.split()
        if words[:2] == ["Step", "Temp"]:
            table = words
            continue
        if table is None:
            continue
        if line.startswith("Loop time"):
            table = None
            continue
        try:
            vals = [float(v) for v in words]
        except ValueError:
            continue
        if len(vals) == len(table):
            out[int(vals[0])] = dict(zip(THERMO_COLS, vals))
    return out


def run_lammps(text, workdir):
    workdir = pathlib.Path(workdir)
    (workdir / "in.lmp").write_text(text)
    proc = subprocess.run([LMP, "-in", "in.lmp", "-log", "log.lammps", "-screen", "none",
                           "-nocite"], cwd=workdir, capture_output=True, text=True,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    if proc.returncode != 0:
        tail = (workdir / "log.lammps").read_text()[-2000:] if (workdir / "log.lammps").exists() \
            else proc.stderr
        raise RuntimeError(f"lmp failed (rc {proc.returncode}):\n{tail}\n{proc.stderr[-1000:]}")


def run_trajectory(recipe, pot, keep_dir=None):
    """Run one recipe; returns a list of frame dicts (positions, forces, cell, energy, virial,
    step, temperature)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(keep_dir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        run_lammps(md_input(recipe, pot), work)
        dump = parse_dump(work / "dump.txt")
        thermo = parse_thermo(work / "log.lammps")
    frames = []
    for step in sorted(dump):
        if step not in thermo:
            raise RuntimeError(f"{recipe['name']}: no thermo line for dump step {step}")
        th = thermo[step]
        cell = np.array([[th["lx"], 0.0, 0.0], [th["xy"], th["ly"], 0.0],
                         [th["xz"], th["yz"], th["lz"]]])
        p = [th[f"c_vir[{k}]"] for k in range(1, 7)]       # xx yy zz xy xz yz, bar
        press = np.array([[p[0], p[3], p[4]], [p[3], p[1], p[5]], [p[4], p[5], p[2]]])
        vol = abs(np.linalg.det(cell))
        frames.append(dict(step=step, temperature=th["temp"], positions=dump[step]["positions"],
                           forces=dump[step]["forces"], cell=cell, energy=th["pe"],
                           virial=press * vol / NKTV2P))
    # the first dumped frame is the last equilibration step; keep exactly `frames` frames
    return frames[-recipe["md"]["frames"]:]


def write_data(path, positions, cell, mass):
    """LAMMPS data file (atom_style atomic, one type) for a restricted-triclinic cell
    (rows a = (lx, 0, 0), b = (xy, ly, 0), c = (xz, yz, lz)) with its origin at 0."""
    cell = np.asarray(cell, dtype=np.float64)
    if abs(cell[0, 1]) + abs(cell[0, 2]) + abs(cell[1, 2]) > 0:
        raise ValueError("cell must be lower triangular (LAMMPS restricted triclinic)")
    lines = ["edgeframe datagen", "", f"{len(positions)} atoms", "1 atom types",
             f"0 {float(cell[0, 0])!r} xlo xhi", f"0 {float(cell[1, 1])!r} ylo yhi", f"0 {float(cell[2, 2])!r} zlo zhi",
             f"{float(cell[1, 0])!r} {float(cell[2, 0])!r} {float(cell[2, 1])!r} xy xz yz", "", "Masses", "",
             f"1 {mass}", "", "Atoms # atomic", ""]
    lines += [f"{k + 1} 1 {float(x)!r} {float(y)!r} {float(z)!r}" for k, (x, y, z) in enumerate(positions)]
    pathlib.Path(path).write_text("\n".join(lines) + "\n")


def evaluate_static(configs, pot):
    """Energy, forces and virial of each (positions, cell) in `configs` with the classical
    potential: one `lmp` process, `run 0` per configuration (read_data / clear loop)."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        script = []
        for k, (pos, cell) in enumerate(configs):
            # LAMMPS wraps atoms into the box itself; positions may lie outside
            write_data(work / f"c{k}.data", pos, cell, pot["mass"])
            script += ["clear", "units metal", "atom_style atomic", "boundary p p p",
                       "atom_modify map array", f"read_data c{k}.data",
                       potential_block(pot).strip(),
                       "compute vir all pressure NULL virial",
                       "thermo_style custom " + " ".join(THERMO_COLS),
                       "thermo_modify norm no format float %.17g",
                       f"dump d all custom 1 dump{k}.txt id type x y z fx fy fz",
                       "dump_modify d sort id format float %.17g",
                       f"print 'CONFIG {k}'", "run 0", "undump d"]
        run_lammps("\n".join(script) + "\n", work)
        # the echoed `print` command holds 'CONFIG k' too; its output line starts with it
        logs = re.split(r"^CONFIG \d+$", (work / "log.lammps").read_text(), flags=re.M)[1:]
        if len(logs) != len(configs):
            raise RuntimeError(f"expected {len(configs)} configurations in the log, got {len(logs)}")
        for k, chunk in enumerate(logs):
            (work / f"log{k}").write_text(chunk)
            th = parse_thermo(work / f"log{k}")[0]
            dump = parse_dump(work / f"dump{k}.txt")[0]
            cell = np.asarray(configs[k][1], dtype=np.float64)
            p = [th[f"c_vir[{c}]"] for c in range(1, 7)]
            press = np.array([[p[0], p[3], p[4]], [p[3], p[1], p[5]], [p[4], p[5], p[2]]])
            out.append(dict(energy=th["pe"], forces=dump["forces"],
                            virial=press * abs(np.linalg.det(cell)) / NKTV2P))
    return out
