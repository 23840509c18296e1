"""Sections on defects: vacancy, surfaces, stacking_fault (see doc/validation.md)."""
import numpy as np

import crystal
from lmp import Failed
from suite import EV_PER_A2_TO_J_PER_M2, GROUND, MODELS, compare, value


def relax_cmds(s, extra=()):
    """CG at fixed box to max |F| 1e-5 eV/A (min_modify norm max), iteration-limited (a
    potential that cannot converge costs at most n iterations)."""
    n = s.size(300, 60)
    return ["min_style cg", "min_modify norm max", *extra, f"minimize 0 1e-5 {n} {10 * n}"]


def energy(res):
    return res if isinstance(res, Failed) else value(res["pe"])


def fmax_note(res, model):
    if isinstance(res, Failed):
        return ""
    return f"{model} final fmax {res['fmax']:.1e} eV/A"


def vacancy(s):
    lattice = GROUND[s.element]
    reps = s.size(3, 2)
    ef, ef0, notes = {}, {}, []
    for model in MODELS:
        a, note = s.a0(model, lattice)
        if note:
            notes.append(note)
        pos, cell = crystal.bulk(lattice, a, reps)
        n = len(pos)
        res = s.run(model, [dict(pos=pos, cell=cell), dict(pos=pos[1:], cell=cell),
                            dict(pos=pos[1:], cell=cell, cmds=relax_cmds(s))], f"vacancy {lattice}")
        e = [energy(r) for r in res]
        bad = next((x for x in e if isinstance(x, Failed)), None)
        ef[model] = bad or e[2] - (n - 1) / n * e[0]
        ef0[model] = bad or e[1] - (n - 1) / n * e[0]
        notes.append(fmax_note(res[2], model))
    note = f"{len(crystal.bulk(lattice, 1.0, reps)[0])}-site cell; " + "; ".join(x for x in notes if x)
    rows = [compare(f"{lattice} vacancy formation energy, relaxed", "eV", ef["model"], ef["reference"],
                    "rel", 0.05, note=note),
            compare(f"{lattice} vacancy formation energy, unrelaxed", "eV", ef0["model"],
                    ef0["reference"], "rel", None)]
    return dict(rows=rows, data=dict(reps=reps), plots=[])


def slab_reps(s, lattice, hkl, a):
    """In-plane periods to reach 5 A, out-of-plane periods to reach the slab thickness."""
    axes = crystal.ORIENT[hkl]
    per = [crystal.period(lattice, v) * a for v in axes]
    thick = s.size(12.0, 8.0)
    return (int(np.ceil(5.0 / per[0])), int(np.ceil(5.0 / per[1])), int(np.ceil(thick / per[2])))


def surfaces(s):
    lattice = GROUND[s.element]
    vacuum = 15.0
    rows, data = [], {}
    gam = {hkl: {} for hkl in crystal.ORIENT}
    gam0 = {hkl: {} for hkl in crystal.ORIENT}
    notes = {hkl: [] for hkl in crystal.ORIENT}
    for model in MODELS:
        a, note = s.a0(model, lattice)
        pos, cell = crystal.bulk(lattice, a, 2)
        configs = [dict(pos=pos, cell=cell)]
        areas, counts = {}, {}
        for hkl in crystal.ORIENT:
            p, c, area = crystal.slab(lattice, a, hkl, slab_reps(s, lattice, hkl, a), vacuum)
            areas[hkl], counts[hkl] = area, len(p)
            configs += [dict(pos=p, cell=c), dict(pos=p, cell=c, cmds=relax_cmds(s))]
        res = s.run(model, configs, f"surfaces {lattice}")
        e_bulk = res[0] if isinstance(res[0], Failed) else value(res[0]["pe"] / res[0]["atoms"])
        for k, hkl in enumerate(crystal.ORIENT):
            for store, r in ((gam0, res[1 + 2 * k]), (gam, res[2 + 2 * k])):
                e = energy(r)
                bad = e_bulk if isinstance(e_bulk, Failed) else e if isinstance(e, Failed) else None
                store[hkl][model] = bad or (e - counts[hkl] * e_bulk) / (2 * areas[hkl]) * EV_PER_A2_TO_J_PER_M2
            notes[hkl] += [x for x in (note, fmax_note(res[2 + 2 * k], model)) if x]
            data.setdefault(hkl, {})["atoms"] = counts[hkl]
    for hkl in crystal.ORIENT:
        rows.append(compare(f"{lattice} ({hkl}) surface energy, relaxed", "J/m^2", gam[hkl]["model"],
                            gam[hkl]["reference"], "rel", 0.05,
                            note=f"{data[hkl]['atoms']} atoms; " + "; ".join(notes[hkl])))
        rows.append(compare(f"{lattice} ({hkl}) surface energy, unrelaxed", "J/m^2", gam0[hkl]["model"],
                            gam0[hkl]["reference"], "rel", None))
    return dict(rows=rows, data=dict(vacuum_A=vacuum, slabs=data), plots=[])


def stacking_fault(s):
    if s.element != "Cu":
        return dict(rows=[], data={}, plots=[], skipped="fcc only (Cu)")
    reps = (2, 1, s.size(4, 3))
    sf, sf0, notes = {}, {}, []
    # atoms relax only normal to the fault (x, y forces zeroed), as in generalised stacking
    # fault calculations; the tilted cell keeps the fault's in-plane shift
    zonly = ["fix zonly all setforce 0.0 0.0 NULL"]
    for model in MODELS:
        a, note = s.a0(model, "fcc")
        (p0, c0), (p1, c1), area = crystal.stacking_fault(a, reps)
        res = s.run(model, [dict(pos=p0, cell=c0), dict(pos=p1, cell=c1),
                            dict(pos=p1, cell=c1, cmds=relax_cmds(s, zonly))], "stacking fault")
        e = [energy(r) for r in res]
        bad = next((x for x in e if isinstance(x, Failed)), None)
        sf[model] = bad or (e[2] - e[0]) / area * EV_PER_A2_TO_J_PER_M2 * 1e3
        sf0[model] = bad or (e[1] - e[0]) / area * EV_PER_A2_TO_J_PER_M2 * 1e3
        notes += [x for x in (note, fmax_note(res[2], model)) if x]
    # hcp (ideal c/a, fcc's nearest-neighbour distance) over fcc in the same kind of cell: by
    # the axial next-nearest-neighbour Ising picture the fault costs about 2 (E_hcp - E_fcc) per
    # atom of a (111) plane, so this row says whether a fault error is the stacking energy's
    dhcp = {}
    for model in MODELS:
        a, _ = s.a0(model, "fcc")
        cells = [crystal.stacked(a, seq, (2, 2, nz)) for seq, nz in (("ABC", 2), ("AB", 3))]
        res = s.run(model, [dict(pos=p, cell=c) for p, c in cells], "hcp over fcc")
        e = [energy(r) for r in res]
        bad = next((x for x in e if isinstance(x, Failed)), None)
        dhcp[model] = bad or 1e3 * (e[1] / len(cells[1][0]) - e[0] / len(cells[0][0]))
    n = len(crystal.stacking_fault(3.6, reps)[0][0])
    rows = [compare("fcc intrinsic stacking fault energy, relaxed", "mJ/m^2", sf["model"],
                    sf["reference"], "rel", 0.10, note=f"{n} atoms, {3 * reps[2]} (111) layers; "
                    + "; ".join(notes)),
            compare("fcc intrinsic stacking fault energy, unrelaxed", "mJ/m^2", sf0["model"],
                    sf0["reference"], "rel", None),
            compare("E(hcp) - E(fcc), ideal c/a at fcc's a0", "meV/atom", dhcp["model"],
                    dhcp["reference"], "rel", None, note="96 atoms each; gamma_ISF ~ 2 dE / A")]
    return dict(rows=rows, data=dict(reps=list(reps)), plots=[])
