"""The examples' inputs run as a user runs them, from the repository root with the plugin passed
as a variable, and do what their README says (examples/*/README.md)."""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Tersoff 1989 carbon's relaxed diamond lattice constant, the v2 potential's training reference
# (its validation at full size: 3.56586 A against Tersoff's 3.56584, potentials/README.md);
# issue 25's bound on a0 is 0.1 %.
TERSOFF_A0 = 3.56584
A0_BOUND = 1e-3
# Velocity Verlet's energy error is O(dt^2) for a smooth potential whose forces are its energy's
# gradient: halving dt divides the largest |E_total - E_total(0)| by 4 (measured 4.00 over 5-20
# fs with the shipped C-diamond-v2; a force that is not the energy's gradient, or a kink, breaks
# the ratio). 10 % either side.
DT2_RATIO, DT2_BOUND = 4.0, 0.10


def run_example(request, path, *variables, timeout=600):
    plugin = request.config.getoption("--plugin")
    cmd = [request.config.getoption("--lmp"), "-in", str(path), "-log", "none",
           "-var", "plugin", str(Path(plugin).resolve())]
    for name, value in variables:
        cmd += ["-var", name, str(value)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    proc.output = proc.stdout + proc.stderr
    return proc


def nve_energy_deviation(output, n_atoms):
    """Largest |E_total - E_total(0)| per atom (eV) of the last thermo block with a Time column."""
    blocks = re.findall(r"^\s*Step\s+Time\s+Temp\s+PotEng\s+KinEng\s+TotEng\s+Press\s*\n(.*?)^Loop time",
                        output, re.M | re.S)
    assert blocks, output[-3000:]
    e = [float(line.split()[5]) for line in blocks[-1].splitlines() if line.strip()]
    return max(abs(x - e[0]) for x in e) / n_atoms


def test_diamond_v2_example_relaxes_the_perfect_lattice_and_conserves_energy(request):
    deviation = {}
    for dt, steps in ((0.0005, 16), (0.00025, 32)):  # the same 8 fs
        proc = run_example(request, "examples/diamond-v2/in.diamond-v2", ("dt", dt), ("steps", steps), ("thermo", 1))
        assert proc.returncode == 0, proc.output[-3000:]
        relaxed = re.search(r"relaxed lattice constant (\S+) A, energy (\S+) eV/atom, pressure (\S+) bar, "
                            r"largest force (\S+) eV/A", proc.output)
        assert relaxed, proc.output[-3000:]
        a, _, pressure, fmax = (float(x) for x in relaxed.groups())
        assert abs(a / TERSOFF_A0 - 1) < A0_BOUND, f"relaxed a0 {a} A"
        # the minimiser stopped on its force tolerance (1e-8 eV/A on the whole force vector)
        assert fmax < 1e-8, f"largest force {fmax} eV/A after the minimisation"
        assert abs(pressure) < 1.0, f"pressure {pressure} bar after box/relax to 0"
        deviation[dt] = nve_energy_deviation(proc.output, 64)
    ratio = deviation[0.0005] / deviation[0.00025]
    assert abs(ratio / DT2_RATIO - 1) < DT2_BOUND, f"energy error at 0.5 / 0.25 fs: {deviation}, ratio {ratio:.3f}"
