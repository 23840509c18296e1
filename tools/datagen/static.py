"""Static (near-equilibrium) reference configurations: one recipe = one base structure, made and
optionally relaxed by LAMMPS with the classical potential, then a fixed list of perturbations
(random displacements, one displaced atom, homogeneous strains), every one evaluated with
`run 0` (lammps_driver.evaluate_static).

These frames cover what MD snapshots never visit and what a materials scientist computes first:
the perfect lattice and its small strains (equation of state, elastic constants), finite
displacements (phonons), relaxed vacancies, surfaces and stacking faults, the isolated atom and
dimers (cohesive energy). Recipe "md" entries of kind "static":

    relax:     minimise the base structure first (fixed box; CG to a force norm of 1e-10)
    relax_z:   during that minimisation only z moves (stacking faults: the fault stays)
    perturb:   list of perturbations, each one frame:
               {}                              the base structure itself
               {"rattle": s}                   every coordinate + N(0, s^2) A
               {"displace": d, "dir": v}       atom 0 moved by d A along unit vector v
               {"strain": (exx, eyy, ezz, eyz, exz, exy)}   x' = (I + e) x with e upper
                                               triangular (keeps LAMMPS' lower-triangular cell)
               keys combine: strain first, then displacement, then rattle
Random numbers: numpy's default_rng(seed of the recipe + index of the perturbation).
"""

import pathlib
import tempfile

import numpy as np

from .lammps_driver import (THERMO_COLS, evaluate_static, parse_dump, parse_thermo, potential_block,
                            run_lammps, structure_block)


def base_input(recipe, pot):
    md = recipe["md"]
    lines = ["units metal", "atom_style atomic", "boundary p p p", "atom_modify map array",
             structure_block(recipe["structure"]), potential_block(pot),
             "compute vir all pressure NULL virial",
             "thermo_style custom " + " ".join(THERMO_COLS),
             "thermo_modify norm no format float %.17g"]
    if md.get("relax"):
        if md.get("relax_z"):
            lines.append("fix keep all setforce 0.0 0.0 NULL")
        lines += ["min_style cg", "minimize 0.0 1.0e-10 20000 200000"]
        if md.get("relax_z"):
            lines.append("unfix keep")
    lines += ["reset_timestep 0", "dump d all custom 1 dump.txt id type x y z fx fy fz",
              "dump_modify d sort id format float %.17g", "run 0", ""]
    return "\n".join(lines)


def base_structure(recipe, pot):
    """(positions [N, 3], cell [3, 3] rows) of the recipe's (relaxed) base structure."""
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        run_lammps(base_input(recipe, pot), work)
        dump = parse_dump(work / "dump.txt")
        th = parse_thermo(work / "log.lammps")
    step = max(dump)
    t = th[step]
    cell = np.array([[t["lx"], 0.0, 0.0], [t["xy"], t["ly"], 0.0], [t["xz"], t["yz"], t["lz"]]])
    return dump[step]["positions"], cell


def perturbed(pos, cell, p, seed):
    pos, cell = pos.copy(), cell.copy()
    if "strain" in p:
        exx, eyy, ezz, eyz, exz, exy = p["strain"]
        F = np.array([[1 + exx, exy, exz], [0.0, 1 + eyy, eyz], [0.0, 0.0, 1 + ezz]])
        pos, cell = pos @ F.T, cell @ F.T
    if "displace" in p:
        v = np.asarray(p["dir"], dtype=np.float64)
        pos[0] += p["displace"] * v / np.linalg.norm(v)
    if "rattle" in p:
        pos += np.random.default_rng(seed).normal(0.0, p["rattle"], size=pos.shape)
    return pos, cell


def run_static(recipe, pot):
    """Frames (as lammps_driver.run_trajectory returns them) of a static recipe."""
    pos, cell = base_structure(recipe, pot)
    configs = [perturbed(pos, cell, p, recipe["md"]["seed"] + k)
               for k, p in enumerate(recipe["md"]["perturb"])]
    results = evaluate_static(configs, pot)
    return [dict(step=k, temperature=0.0, positions=c[0], forces=r["forces"], cell=c[1],
                 energy=r["energy"], virial=r["virial"])
            for k, (c, r) in enumerate(zip(configs, results))]
