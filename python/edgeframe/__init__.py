"""edgeframe from Python: the engine of the LAMMPS pair style (edgeframe._engine) and an ASE
calculator on it (doc/python.md).

    import edgeframe
    atoms.calc = edgeframe.Calculator("model.safetensors", device="cpu", precision="fp64")

The calculator is imported when first asked for, so that `edgeframe.Model` works without ASE.
"""
from ._engine import ComputeError, InputError, Model, execution_space, version

__all__ = ["Calculator", "Model", "InputError", "ComputeError", "execution_space", "version"]


def __getattr__(name):
    if name == "Calculator":
        from .calculator import Calculator
        return Calculator
    raise AttributeError(f"module 'edgeframe' has no attribute {name!r}")
