"""Fits of the validation suite: third-order Birch-Murnaghan E(V), log-log slopes.

Birch-Murnaghan (third order): E(V) = E0 + 9 V0 B0 / 16 {(x - 1)^3 B0' + (x - 1)^2 (6 - 4 x)},
x = (V0 / V)^(2/3), is a cubic polynomial in t = V^(-2/3); the fit is linear least squares of
E in t (no nonlinear solver), V0 the root of dE/dt = 0 inside the sampled range, and
B0 = V d2E/dV2 at V0 = V0 (dt/dV)^2 d2E/dt2 (the dE/dt term vanishes there).
"""
import numpy as np

EV_PER_A3_TO_GPA = 160.21766208


def birch_murnaghan(volumes, energies):
    """volumes, energies per atom (A^3, eV) -> dict(V0, E0, B0_GPa, Bp, rms_meV) or raises
    ValueError when there is no minimum inside the sampled volumes."""
    v = np.asarray(volumes, dtype=np.float64)
    e = np.asarray(energies, dtype=np.float64)
    if len(v) < 5 or not np.all(np.isfinite(e)):
        raise ValueError("need at least 5 finite energies")
    t = v ** (-2.0 / 3.0)
    t0 = t.mean()
    p = np.polyfit(t - t0, e, 3)                     # centred for conditioning
    dp, ddp = np.polyder(p), np.polyder(p, 2)
    roots = [r.real + t0 for r in np.roots(dp) if abs(r.imag) < 1e-12]
    roots = [r for r in roots if t.min() <= r <= t.max() and np.polyval(ddp, r - t0) > 0]
    if not roots:
        raise ValueError("no minimum of E(V) inside the sampled volumes")
    tm = roots[0]
    v0 = tm ** -1.5
    dtdv = -2.0 / 3.0 * v0 ** (-5.0 / 3.0)
    b0 = v0 * dtdv ** 2 * np.polyval(ddp, tm - t0)
    # B(V) = V d2E/dV2 of the fitted cubic; B' = dB/dP = -V dB/dV / B at V0, by central differences
    def bulk(vv):
        tt = vv ** (-2.0 / 3.0)
        d1 = -2.0 / 3.0 * vv ** (-5.0 / 3.0)
        d2 = 10.0 / 9.0 * vv ** (-8.0 / 3.0)
        return vv * (np.polyval(ddp, tt - t0) * d1 ** 2 + np.polyval(dp, tt - t0) * d2)
    h = 1e-4 * v0
    bp = -v0 * (bulk(v0 + h) - bulk(v0 - h)) / (2 * h) / b0
    resid = e - np.polyval(p, t - t0)
    return dict(V0=float(v0), E0=float(np.polyval(p, tm - t0)), B0_GPa=float(b0 * EV_PER_A3_TO_GPA),
                Bp=float(bp), rms_meV=float(1e3 * np.sqrt((resid ** 2).mean())))


def loglog_slopes(x, y):
    """Least-squares slope of log y against log x, and the slopes between neighbours."""
    lx, ly = np.log10(np.asarray(x, float)), np.log10(np.asarray(y, float))
    return float(np.polyfit(lx, ly, 1)[0]), list(map(float, np.diff(ly) / np.diff(lx)))
