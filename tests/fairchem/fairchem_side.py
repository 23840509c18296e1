"""fairchem's own predictions (its predict unit through its ASE calculator, CPU, "general"
execution mode, experts not merged) and the same structure through edgeframe's v2 reference."""

import numpy as np
import torch
from ase import Atoms
from ase.build import bulk, molecule

from fairchem.core.calculate.ase_calculator import FAIRChemCalculator
from fairchem.core.units.mlip_unit import load_predict_unit
from fairchem.core.units.mlip_unit.api.inference import InferenceSettings

from edgeframe_ref.neighbors import edge_vectors, neighbor_list


def structure(name):
    """Small test structures (<= 32 atoms), rattled with fixed seeds; positions and cell are
    rounded to float32 values so that both codes see exactly the same input."""
    if name == "diamond":
        a = bulk("C", "diamond", a=3.567, cubic=True).repeat((1, 1, 2))
    elif name == "fcc_cu":
        a = bulk("Cu", "fcc", a=3.61, cubic=True).repeat((2, 1, 1))
    elif name == "bcc_cu":
        a = bulk("Cu", "bcc", a=2.87, cubic=True).repeat((2, 2, 2))
    elif name == "mgo":
        a = bulk("MgO", "rocksalt", a=4.21, cubic=True)
    elif name == "triclinic":
        a = Atoms("Cu2O2", scaled_positions=[[0, 0, 0], [0.5, 0.45, 0.55], [0.25, 0.3, 0.2],
                                             [0.7, 0.8, 0.75]],
                  cell=[[3.4, 0.0, 0.0], [0.9, 3.2, 0.0], [0.6, 0.7, 3.6]], pbc=True)
    elif name == "molecule":
        a = molecule("CH4")
        a.center(vacuum=10.0)
        a.pbc = False
    else:
        raise ValueError(f"unknown structure {name}")
    a.rattle(0.05, seed=len(name))
    a.positions = a.positions.astype(np.float32).astype(np.float64)
    a.cell = np.array(a.cell).astype(np.float32).astype(np.float64)
    return a


def predict_unit(checkpoint, dtype=torch.float64, device="cpu"):
    settings = InferenceSettings(base_precision_dtype=dtype, merge_mole=False, tf32=False,
                                 activation_checkpointing=False, execution_mode="general",
                                 compile=False, external_graph_gen=False)
    return load_predict_unit(str(checkpoint), inference_settings=settings, device=device)


def fairchem_predict(unit, atoms, task, charge=0, spin=None):
    """energy, forces [N, 3], stress [3, 3] (ASE's sign: -virial / volume), per-atom energies [N]
    (the head's per-atom outputs, times the task's rmsd, plus its element references)."""
    atoms = atoms.copy()
    atoms.info.update(charge=charge, spin=(1 if task == "omol" else 0) if spin is None else spin)
    head = next(iter(unit.model.module.output_heads.values())).head
    captured = {}
    # On the host: the unit may run on a GPU.
    hook = head.energy_block.register_forward_hook(lambda m, i, o: captured.update(node=o.detach().cpu()))
    try:
        atoms.calc = FAIRChemCalculator(unit, task_name=task)
        energy = atoms.get_potential_energy()
        forces = atoms.get_forces()
        stress = atoms.get_stress(voigt=False) if atoms.pbc.all() else None
    finally:
        hook.remove()
    energy_task = next(t for t in unit.tasks.values() if t.property == "energy" and task in t.datasets)
    per_atom = captured["node"].view(-1).double() * float(energy_task.normalizer.rmsd)
    refs = energy_task.element_references
    if refs is not None:
        per_atom = per_atom + refs.element_references.detach().cpu().double()[torch.as_tensor(atoms.numbers)]
    return dict(energy=energy, forces=forces, stress=stress, energies=per_atom.numpy())


def reference_predict(model, atoms, task, charge=0, spin=None):
    """The same outputs from edgeframe's v2 reference (tools/edgeframe_ref/model_v2.py)."""
    z = torch.as_tensor(atoms.numbers, dtype=torch.int64)
    model.set_system(z, task=task, charge=charge, spin=spin)
    cell = np.array(atoms.cell)
    i, j, s = neighbor_list(atoms.positions, cell, tuple(atoms.pbc), model.cfg.r_cut)
    dtype = next(model.parameters()).dtype
    pos = torch.as_tensor(atoms.positions, dtype=torch.float64)
    vec64 = edge_vectors(pos, cell, i, j, s)
    vec = vec64.to(dtype).detach().requires_grad_(True)
    e = model(z, i, j, vec)
    (g,) = torch.autograd.grad(e.sum(), vec)
    g = g.double()
    f = torch.zeros(len(atoms), 3, dtype=torch.float64).index_add_(0, i, g).index_add_(0, j, -g)
    virial = -(vec64[:, :, None] * g[:, None, :]).sum(0).numpy()
    stress = -virial / atoms.get_volume() if atoms.pbc.all() else None
    return dict(energy=float(e.detach().double().sum()), forces=f.numpy(), stress=stress,
                energies=e.detach().double().numpy())
