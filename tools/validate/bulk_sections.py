"""Sections on the perfect crystal: eos, elastic, phonons, isolated_atom (see doc/validation.md)."""
import numpy as np

import crystal
import phonons as ph
from fit import birch_murnaghan
from lmp import Failed
from plots import legend, plt
from suite import BAR_TO_GPA, GROUND, LATTICES, MODELS, compare, deviation, per_atom, value

EOS_REPS = {"diamond": 2, "fcc": 2, "bcc": 3}        # conventional cells per edge (64, 32, 54 atoms)


def eos_fit(s, model, lattice):
    """E(V) scan around the reference's a0 and its Birch-Murnaghan fit, kept in s.eos."""
    a = s.a_ref(lattice)
    span, n = s.size((0.03, 11), (0.02, 7))
    scales = np.linspace(1 - span, 1 + span, n)
    pos, cell = crystal.bulk(lattice, a, EOS_REPS[lattice])
    res = s.run(model, [dict(pos=pos * f, cell=cell * f) for f in scales], f"eos {lattice}")
    nb = s.natoms_basis(lattice)
    vols = (a * scales) ** 3 / nb
    energies = [per_atom(r) for r in res]
    s.eos_points = getattr(s, "eos_points", {})
    s.eos_points[(model, lattice)] = (vols, energies)
    bad = [e for e in energies if isinstance(e, Failed)]
    if bad:
        s.eos[(model, lattice)] = Failed(f"{len(bad)} of {n} energies: {bad[0].reason}")
        return
    try:
        fit = birch_murnaghan(vols, energies)
    except ValueError as err:
        s.eos[(model, lattice)] = Failed(str(err))
        return
    fit["a0"] = (fit["V0"] * nb) ** (1 / 3)
    s.eos[(model, lattice)] = fit


def field(fit, key):
    return fit if isinstance(fit, Failed) else fit[key]


def eos(s):
    rows, data = [], {}
    for lattice in LATTICES[s.element]:
        for model in MODELS:
            if (model, lattice) not in s.eos:
                eos_fit(s, model, lattice)
        fm, fr = s.eos[("model", lattice)], s.eos[("reference", lattice)]
        rows += [compare(f"{lattice} a0", "A", field(fm, "a0"), field(fr, "a0"), "rel", 0.001),
                 compare(f"{lattice} B", "GPa", field(fm, "B0_GPa"), field(fr, "B0_GPa"), "rel", 0.03),
                 compare(f"{lattice} B'", "", field(fm, "Bp"), field(fr, "Bp"), "rel", None),
                 compare(f"{lattice} E0", "eV/atom", field(fm, "E0"), field(fr, "E0"), "abs", None),
                 compare(f"{lattice} fit r.m.s. residual", "meV/atom", field(fm, "rms_meV"),
                         field(fr, "rms_meV"), "abs", None)]
        data[lattice] = {m: dict(fit=(repr(s.eos[(m, lattice)]) if isinstance(s.eos[(m, lattice)], Failed)
                                      else s.eos[(m, lattice)]),
                                 volumes=list(map(float, s.eos_points[(m, lattice)][0])),
                                 energies=[value(e) if not isinstance(e, Failed) else repr(e)
                                           for e in s.eos_points[(m, lattice)][1]])
                         for m in MODELS}
    if s.element == "Cu":
        d = {m: (Failed("E(V) fit failed") if isinstance(s.eos[(m, "bcc")], Failed) or
                 isinstance(s.eos[(m, "fcc")], Failed)
                 else 1e3 * (s.eos[(m, "bcc")]["E0"] - s.eos[(m, "fcc")]["E0"])) for m in MODELS}
        rows.append(compare("E(bcc) - E(fcc) at each minimum", "meV/atom", d["model"],
                            d["reference"], "abs", 3.0))
    fig, axes = plt.subplots(1, len(LATTICES[s.element]), figsize=(5 * len(LATTICES[s.element]), 4),
                             squeeze=False)
    for ax, lattice in zip(axes[0], LATTICES[s.element]):
        for m, style in zip(MODELS, ("o", "s")):
            v, e = s.eos_points[(m, lattice)]
            ok = [k for k, x in enumerate(e) if not isinstance(x, Failed)]
            ax.plot(v[ok], [e[k] for k in ok], style, mfc="none", label=m)
            fit = s.eos[(m, lattice)]
            if not isinstance(fit, Failed):
                vv = np.linspace(v.min(), v.max(), 200)
                x = (fit["V0"] / vv) ** (2 / 3)
                b = fit["B0_GPa"] / 160.21766208
                ax.plot(vv, fit["E0"] + 9 * fit["V0"] * b / 16 * ((x - 1) ** 3 * fit["Bp"]
                                                                  + (x - 1) ** 2 * (6 - 4 * x)), "-",
                        lw=0.8, color=ax.lines[-1].get_color())
        ax.set(xlabel="volume (A^3/atom)", ylabel="energy (eV/atom)", title=f"{s.element} {lattice}")
        legend(ax)
    fig.tight_layout()
    fig.savefig(s.out / "eos.png", dpi=120)
    plt.close(fig)
    return dict(rows=rows, data=data, plots=["eos.png"])


def strained(pos, cell, kind, eps):
    """Normal strain e_xx = eps or engineering shear gamma_yz = eps (x_y += eps x_z)."""
    F = np.eye(3)
    if kind == "xx":
        F[0, 0] += eps
    else:
        F[1, 2] += eps
    return dict(pos=pos @ F.T, cell=cell @ F.T)


def elastic(s):
    rows, data = [], {}
    relax = ["min_style cg", "min_modify norm max", "minimize 0 1e-8 200 2000"]
    for lattice in LATTICES[s.element]:
        strains = (0.005, 0.01)
        const, notes = {}, {}
        for model in MODELS:
            a, notes[model] = s.a0(model, lattice)
            pos, cell = crystal.bulk(lattice, a, EOS_REPS[lattice])
            configs, keys = [], []
            for eps in strains:
                for kind in ("xx", "yz"):
                    for sign in (+1, -1):
                        configs.append(dict(strained(pos, cell, kind, sign * eps), cmds=relax))
                        keys.append((eps, kind, sign))
            res = dict(zip(keys, s.run(model, configs, f"elastic {lattice}")))
            const[model] = {}
            for eps in strains:
                p = lambda kind, sign, c: (res[(eps, kind, sign)] if isinstance(res[(eps, kind, sign)], Failed)
                                           else res[(eps, kind, sign)][c])  # noqa: E731
                vals = [p(k, sg, c) for k in ("xx", "yz") for sg in (1, -1) for c in ("pxx", "pyy", "pzz", "pyz")]
                bad = next((v for v in vals if isinstance(v, Failed)), None)
                if bad:
                    const[model][eps] = {c: bad for c in ("C11", "C12", "C44")}
                    continue
                d = lambda kind, c: -(p(kind, 1, c) - p(kind, -1, c)) * BAR_TO_GPA / (2 * eps)  # noqa
                const[model][eps] = dict(C11=d("xx", "pxx"), C12=(d("xx", "pyy") + d("xx", "pzz")) / 2,
                                         C44=d("yz", "pyz"))
        for eps in strains:
            for c in ("C11", "C12", "C44"):
                rows.append(compare(f"{lattice} {c} (+-{100 * eps:g} %)", "GPa", const["model"][eps][c],
                                    const["reference"][eps][c], "rel", 0.03, note=notes["model"]))
        data[lattice] = {m: {str(e): {k: (v if not isinstance(v, Failed) else repr(v))
                                      for k, v in const[m][e].items()} for e in strains} for m in MODELS}
    return dict(rows=rows, data=data, plots=[])


PHONON_LATTICES = {"C": ["diamond"], "Cu": ["fcc"]}


def phonon_model(s, model, lattice, a, reps, h):
    """Dynamical (or Failed) of `model` at lattice constant a: conventional reps^3 supercell,
    +-h displacements of one atom per primitive-basis site."""
    pos, cell = crystal.bulk(lattice, a, reps)
    nb = len(crystal.PRIMITIVE[lattice][1])
    sites = [0, 4] if nb == 2 else [0]
    site_of = (np.arange(len(pos)) % 8 >= 4).astype(int) if nb == 2 else np.zeros(len(pos), int)
    cfgs = ph.displaced_configs(pos, sites, h)
    res = s.run(model, [dict(pos=p, cell=cell, forces=True) for _, _, _, p in cfgs],
                f"phonons {lattice}")
    bad = next((r for r in res if isinstance(r, Failed)), None)
    if bad:
        return bad
    forces = [r["forces"] for r in res]
    if not all(np.all(np.isfinite(f)) for f in forces):
        return Failed("non-finite forces")
    phi = ph.force_constants(forces, sites, h)
    return ph.Dynamical(phi, pos, cell, sites, site_of, [s.mass] * nb)


def phonons(s):
    rows, data, plots = [], {}, []
    h = 0.01
    for lattice in PHONON_LATTICES[s.element]:
        reps = s.phonon_reps(lattice)
        bands, notes = {}, {}
        qs = None
        for model in MODELS:
            a, notes[model] = s.a0(model, lattice)
            dyn = phonon_model(s, model, lattice, a, reps, h)
            if isinstance(dyn, Failed):
                bands[model] = dyn
                continue
            # the same path in units of 2 pi / a for both: q scaled by each one's a
            qs, x, labels = ph.fcc_path(a, s.size(20, 10))
            bands[model] = np.array([dyn.frequencies(q) for q in qs])
            bands[model + "_x"] = x * a / (2 * np.pi)
        qs_unit, x_unit, labels = ph.fcc_path(1.0, s.size(20, 10))
        labels = [(xx / (2 * np.pi), n) for xx, n in labels]
        gx = ph.segment(qs_unit, (0, 0, 0), (1, 0, 0), 1.0)
        fm, fr = bands["model"], bands["reference"]
        okm, okr = not isinstance(fm, Failed), not isinstance(fr, Failed)
        nband = 3 * len(crystal.PRIMITIVE[lattice][1])
        if lattice == "diamond":
            rows.append(compare("diamond Gamma optical frequency", "THz", fm[0, -1] if okm else fm,
                                fr[0, -1] if okr else fr, "rel", 0.03, note=notes["model"]))
        if okm and okr:
            sel = gx[1:]                                        # Gamma itself: acoustic zeros
            rel = np.abs(fm[sel] - fr[sel]) / np.abs(fr[sel])
            i, j = np.unravel_index(np.argmax(rel), rel.shape)
            note = f"largest at q = {x_unit[sel][i] / (2 * np.pi):.3f} (2 pi/a) [100], band {j + 1}"
            dev = 100 * float(rel.max())
        else:
            dev, note = (fm if not okm else fr), ""
        cells = f"{reps}^3 conventional cells, {reps ** 3 * s.natoms_basis(lattice)} atoms"
        rows.append(deviation(f"{lattice} Gamma-X dispersion: max |f_model / f_reference - 1|",
                              "%", dev, 3.0, note=f"{note}; {cells}" if note else cells))
        k_x = gx[-1]
        for b in range(0, nband, 2) if nband == 6 else (0, 2):
            name = f"bands {b + 1}-{b + 2}" if (nband == 6 or b == 0) else f"band {b + 1}"
            rows.append(compare(f"{lattice} X, {name}", "THz", fm[k_x, b] if okm else fm,
                                fr[k_x, b] if okr else fr, "rel", None))
        rows.append(compare(f"{lattice} acoustic sum: max |f| at Gamma of the 3 lowest", "THz",
                            float(np.abs(fm[0, :3]).max()) if okm else fm,
                            float(np.abs(fr[0, :3]).max()) if okr else fr, "abs", None))
        data[lattice] = dict(q_path_2pi_over_a=qs_unit.tolist() if qs is not None else None,
                             **{m: (bands[m].tolist() if not isinstance(bands[m], Failed) else repr(bands[m]))
                                for m in MODELS}, supercell=f"{reps}^3 conventional", h_A=h)
        fig, ax = plt.subplots(figsize=(6, 4))
        for m, style in zip(MODELS, ("-", "--")):
            if not isinstance(bands[m], Failed):
                ax.plot(x_unit / (2 * np.pi), bands[m], style, color="C0" if m == "model" else "k",
                        lw=1, label=[m] + [None] * (nband - 1))
        for xx, n in labels:
            ax.axvline(xx, color="0.8", lw=0.5)
        ax.set_xticks([xx for xx, _ in labels], [n.replace("G", "Gamma") for _, n in labels])
        ax.set(ylabel="frequency (THz)", title=f"{s.element} {lattice} phonons")
        legend(ax)
        fig.tight_layout()
        fig.savefig(s.out / f"phonons-{lattice}.png", dpi=120)
        plt.close(fig)
        plots.append(f"phonons-{lattice}.png")
    return dict(rows=rows, data=data, plots=plots)


def isolated_atom(s):
    box = 20.0
    res = {m: s.run(m, [dict(pos=np.full((1, 3), box / 2), cell=np.eye(3) * box)], "isolated atom")[0]
           for m in MODELS}
    e_atom = {m: (res[m] if isinstance(res[m], Failed) else value(res[m]["pe"])) for m in MODELS}
    lattice = GROUND[s.element]
    for m in MODELS:
        if (m, lattice) not in s.eos:
            eos_fit(s, m, lattice)
    coh = {}
    for m in MODELS:
        fit = s.eos[(m, lattice)]
        coh[m] = (e_atom[m] if isinstance(e_atom[m], Failed) else fit if isinstance(fit, Failed)
                  else e_atom[m] - fit["E0"])
    rows = [compare("energy of an isolated atom", "meV", e_atom["model"], e_atom["reference"], "abs",
                    10.0, scale=1e3),
            compare(f"cohesive energy ({lattice}, at its minimum)", "eV/atom", coh["model"],
                    coh["reference"], "rel", 0.01)]
    return dict(rows=rows, data=dict(box_A=box, e_atom={m: value(e_atom[m]) if not isinstance(e_atom[m], Failed)
                                                        else repr(e_atom[m]) for m in MODELS}),
                plots=[])
