"""edgeframe from Python: the engine of the LAMMPS pair style (edgeframe._engine) and an ASE
calculator on it (doc/python.md).

    import edgeframe
    atoms.calc = edgeframe.Calculator("model.safetensors", device="cpu", precision="fp64")
"""
from ._engine import ComputeError, InputError, Model, execution_space, version
from .calculator import Calculator

__all__ = ["Calculator", "Model", "InputError", "ComputeError", "execution_space", "version"]
