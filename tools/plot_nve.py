"""Plot total-energy conservation from LAMMPS logs of examples/diamond/in.nve-conservation.
usage: plot_nve.py OUT.png LABEL=log.lammps [LABEL=log.lammps ...]"""
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def thermo(path):
    """Header and rows of the (last) thermo block whose header starts with Step Time."""
    rows, header, active = [], None, False
    for line in open(path):
        parts = line.split()
        if parts[:2] == ["Step", "Time"]:
            header, active, rows = parts, True, []
            continue
        if active and len(parts) == len(header):
            try:
                rows.append([float(v) for v in parts])
                continue
            except ValueError:
                pass
        active = False
    return header, np.array(rows)


def main():
    out, runs = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    fig, (ax_e, ax_t) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    for label, path in runs:
        cols, data = thermo(path)
        t = data[:, cols.index("Time")]
        etot = data[:, cols.index("TotEng")]
        n_atoms = 216
        ax_e.plot(t, (etot - etot[0]) / n_atoms * 1e3, label=label)
        ax_t.plot(t, data[:, cols.index("Temp")], label=label)
        print(f"{label}: max |E_tot - E_tot(0)| = {np.abs(etot - etot[0]).max() / n_atoms:.3e} eV/atom over {t[-1]:.3f} ps")
    ax_e.set_ylabel("E_tot - E_tot(0) [meV/atom]")
    ax_t.set_ylabel("T [K]")
    ax_t.set_xlabel("time [ps]")
    ax_e.legend()
    ax_e.set_title("NVE: 216-atom diamond, shipped C potential, dt 0.5 fs")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
