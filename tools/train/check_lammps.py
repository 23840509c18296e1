#!/usr/bin/env python3
"""The shipped potentials in LAMMPS (pair_style edgeframe, the plugin) against the reference.

    source /opt/edgeframe-deps/env-cpu.sh
    $EDGEFRAME_PYTHON tools/train/check_lammps.py [--plugin build/src/lammps/edgeframeplugin.so]
        [--precision fp64]

One data-set frame per element (C: 63-atom vacancy cell at 1000 K, test set; Cu: 54-atom bcc
cell at 450 K, training set):
energy, forces and virial from LAMMPS `run 0` and from edgeframe_ref.calc.evaluate (float64).
"""
import argparse
import sys, subprocess, tempfile, pathlib, numpy as np, torch
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
torch.set_num_threads(1)
from datagen.lammps_driver import write_data, parse_dump, parse_thermo, NKTV2P
from edgeframe_ref.potential_io import load_model
from edgeframe_ref.calc import evaluate
from edgeframe_ref.structures import Atoms
ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
ap.add_argument("--plugin", default="build/src/lammps/edgeframeplugin.so")
ap.add_argument("--precision", default="fp64")
args = ap.parse_args()
d = {"C": np.load("tools/data/C.npz"), "Cu": np.load("tools/data/Cu.npz")}
for el, f, frame in (("C", "potentials/C-diamond.safetensors", 700), ("Cu", "potentials/Cu.safetensors", 300)):
    a = d[el]; off = int(a["n_atoms"][:frame].sum()); n = int(a["n_atoms"][frame])
    pos, cell = a["positions"][off:off+n], a["cell"][frame]
    m = load_model(f)
    ref = evaluate(m, Atoms(pos, cell, (True,)*3, [el]*n))
    with tempfile.TemporaryDirectory() as tmp:
        w = pathlib.Path(tmp)
        write_data(w/"c.data", pos, cell, 12.011 if el == "C" else 63.546)
        (w/"in").write_text(f"""plugin load {pathlib.Path(args.plugin).resolve()}
units metal
atom_style atomic
atom_modify map array
read_data c.data
pair_style edgeframe precision {args.precision}
pair_coeff * * {pathlib.Path(f).resolve()} {el}
compute vir all pressure NULL virial
thermo_style custom step pe c_vir[1] c_vir[2] c_vir[3] c_vir[4] c_vir[5] c_vir[6]
thermo_modify format float %.17g
dump d all custom 1 d.txt id fx fy fz
dump_modify d sort id format float %.17g
run 0
""")
        r = subprocess.run(["lmp", "-in", "in", "-log", "log", "-screen", "none"], cwd=w, capture_output=True, text=True)
        if r.returncode: print(el, "lmp failed", (w/"log").read_text()[-800:]); continue
        log = (w/"log").read_text().splitlines()
        k = [i for i, l in enumerate(log) if l.split()[:2] == ["Step", "PotEng"]][0]
        vals = [float(v) for v in log[k+1].split()]
        fl = np.array([[float(v) for v in l.split()[1:]] for l in (w/"d.txt").read_text().splitlines()[9:9+n]])
        p = vals[2:]; P = np.array([[p[0],p[3],p[4]],[p[3],p[1],p[5]],[p[4],p[5],p[2]]])
        W = P*abs(np.linalg.det(cell))/NKTV2P
        print(f"{el} frame {frame} ({n} atoms): E lammps {vals[1]:.10f} ref {ref['energy']:.10f} diff {vals[1]-ref['energy']:.2e} eV; "
              f"max|dF| {np.abs(fl-ref['forces']).max():.2e} eV/A; max|dW| {np.abs(W-ref['virial']).max():.2e} eV")
