"""Plot bench/nve_precision.py's runs: E_tot - E_tot(0) per atom against time, one panel per run
directory, one line per precision.
usage: plot_nve_precision.py OUT.png TITLE=DIR [TITLE=DIR ...]"""
import json
import pathlib
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def main():
    out, panels = sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.2), squeeze=False)
    for ax, (title, d) in zip(axes[0], panels):
        d = pathlib.Path(d)
        summary = json.loads((d / "summary.json").read_text())
        for run in summary["runs"]:
            if "error" in run:
                continue
            rows = np.loadtxt(d / f"nve-{run['precision']}.csv", delimiter=",", skiprows=1)
            ax.plot(rows[:, 1], (rows[:, 4] - rows[0, 4]) * 1e3, lw=1,
                    label=f"{run['precision']} (band {run['band_from_settle_meV_atom']:.3g} meV/atom)")
        ax.set_title(f"{title}: {summary['runs'][0]['atoms']} atoms, dt {summary['runs'][0]['dt_fs']} fs")
        ax.set_xlabel("time (fs)")
        ax.set_ylabel("E_tot - E_tot(0) (meV/atom)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
