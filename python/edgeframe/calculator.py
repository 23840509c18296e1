"""ASE calculator on edgeframe's engine: energy, forces, stress and per-atom energies of a
potential file (model v1 or v2), the same numbers as pair_style edgeframe on the same structure
(tests/lammps/test_python_calculator.py). The neighbour pairs come from ase.neighborlist; the
engine keeps those within the model's cutoff."""
import numpy as np
from ase.calculators.calculator import Calculator as _AseCalculator
from ase.calculators.calculator import all_changes
from ase.neighborlist import neighbor_list

from ._engine import Model, execution_space

# The engine's execution space is fixed when it is built (Kokkos' default space).
_DEVICES = {"cpu": ("Serial", "OpenMP", "Threads", "HPX"), "cuda": ("Cuda",)}


class Calculator(_AseCalculator):
    """atoms.calc = Calculator("model.safetensors", device="auto", precision="fp64")

    device: "auto" (this build's execution space), "cpu" or "cuda" (checked against the build).
    precision: "fp64", "fp32" or "tf32" (CUDA builds). Model v2 only: task, charge, spin as the
    pair style's keywords (None: the model's defaults)."""

    implemented_properties = ["energy", "free_energy", "forces", "stress", "energies"]

    def __init__(self, model, device="auto", precision="fp64", task=None, charge=None, spin=None, **kwargs):
        super().__init__(**kwargs)
        space = execution_space()
        if device not in ("auto", *_DEVICES):
            raise ValueError(f"edgeframe.Calculator: unknown device '{device}' (valid: auto, cpu, cuda)")
        if device != "auto" and space not in _DEVICES[device]:
            raise ValueError(f"edgeframe.Calculator: device '{device}' is not this build's: its engine runs on "
                             f"{space} (build with --gpu for cuda, without for cpu), or pass device='auto'")
        self.model = Model(str(model), precision)
        self.device, self.precision = space, precision
        if self.model.format_version != 2 and (task is not None or charge is not None or spin is not None):
            raise ValueError(f"edgeframe.Calculator: task, charge and spin are model v2 settings; {model} is a v1 "
                             "model")
        self._system = (task or "", charge, spin)
        self._composition = None

    def _species(self, atoms):
        symbols = atoms.get_chemical_symbols()
        if self.model.format_version != 2:
            known = set(self.model.elements)
            missing = sorted(set(symbols) - known)
            if missing:
                raise ValueError(f"edgeframe.Calculator: the model has no element {', '.join(missing)} (it has: "
                                 f"{' '.join(self.model.elements)})")
        return np.asarray(self.model.species_of(symbols), dtype=np.int32)

    def _set_system(self, atoms):
        counts = np.bincount(atoms.numbers, minlength=self.model.max_num_elements).astype(float)
        if counts.shape[0] > self.model.max_num_elements:
            raise ValueError(f"edgeframe.Calculator: atomic number {atoms.numbers.max()} is beyond the model's "
                             f"elements (Z < {self.model.max_num_elements})")
        if self._composition is None or not np.array_equal(counts, self._composition):
            task, charge, spin = self._system
            self.model.set_system(task, charge, spin, counts.tolist())
            self._composition = counts

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        atoms = self.atoms
        species = self._species(atoms)
        if self.model.format_version == 2:
            self._set_system(atoms)
        # Directed pairs (i receives from j), every periodic image; the engine keeps r < r_cut.
        i, j, images = neighbor_list("ijS", atoms, self.model.r_cut * (1 + 1e-9))
        shifts = images @ np.asarray(atoms.cell, dtype=np.float64)
        out = self.model.compute(np.asarray(atoms.positions, dtype=np.float64), species, i.astype(np.int32),
                                 j.astype(np.int32), shifts, energies=True, virial=True)
        self.results["energy"] = self.results["free_energy"] = out["energy"]
        self.results["forces"] = out["forces"]
        self.results["energies"] = out["energies"]
        if all(atoms.pbc):
            # ASE's stress is (1/V) dE/d(strain) = -W / V for the engine's virial
            # W_ab = -sum_e r_e,a (dE/dr_e)_b (eV); Voigt order xx yy zz yz xz xy.
            s = -out["virial"] / atoms.get_volume()
            self.results["stress"] = np.array([s[0, 0], s[1, 1], s[2, 2], s[1, 2], s[0, 2], s[0, 1]])
