#!/usr/bin/env python3
"""doc/training-C-loss.png for carbon v7, drawn from this call's train.log (the runs' history.json
and loss.png did not come back). The log has every 5th epoch line of each run (and epoch 1, and
the last epoch where it fell on a multiple of 5); the last point of C-cont-e20-lr2 (epoch 29) is
the summary's final validation evaluation of the written file, which has no loss value.

    $EDGEFRAME_PYTHON bench/results/training/gpu-2026-11-30h/plot_loss.py bench/results/training/gpu-2026-11-30h/train.log /tmp/C-v7-loss.png

(It drew doc/training-C-loss.png while v7 was shipped; that file is v8's own loss plot now, so
write v7's somewhere else.)
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

EPOCH = re.compile(r"^\[C\] epoch (\d+)/\d+ .* train (\S+) val (\S+) E (\S+) meV/atom F (\S+) meV/A")
log = open(sys.argv[1]).read().splitlines()
runs, run = {}, None
for line in log:
    m = re.match(r"^== (\S+) log \(epoch lines", line)
    if m:
        run = runs.setdefault(m.group(1), dict(ep=[], train=[], val=[], E=[], F=[], final=None))
        continue
    m = re.match(r"^== (\S+)$", line)
    if m:
        run = None
        cur = m.group(1)
        continue
    m = re.match(r"^\s+val E .* \(epoch 1 -> (\d+)\)", line)
    if m and run is None:
        runs.setdefault(cur, dict(ep=[], train=[], val=[], E=[], F=[], final=None))["last"] = int(m.group(1))
    m = re.match(r"^\s+val\s+E\s+(\S+) F\s+(\S+) W", line)
    if m and run is None:
        runs.setdefault(cur, dict(ep=[], train=[], val=[], E=[], F=[], final=None))["final"] = \
            (float(m.group(1)), float(m.group(2)))
    m = EPOCH.match(line)
    if m and run is not None:
        ep, tr, va, e, f = (float(x) for x in m.groups())
        run["ep"].append(int(ep)), run["train"].append(tr), run["val"].append(va)
        run["E"].append(e), run["F"].append(f)

fig, ax = plt.subplots(1, 3, figsize=(13, 3.8))
for (name, r), col in zip(runs.items(), ("C0", "C1")):
    ax[0].semilogy(r["ep"], r["train"], "o--", color=col, ms=3, label=f"{name} train (running)")
    ax[0].semilogy(r["ep"], r["val"], "o-", color=col, ms=3, label=f"{name} val (EMA)")
    ep_e, E, F = list(r["ep"]), list(r["E"]), list(r["F"])
    if r.get("final") and r.get("last") and r["last"] not in ep_e:
        ep_e.append(r["last"]), E.append(r["final"][0]), F.append(r["final"][1])
    ax[1].semilogy(ep_e, E, "o-", color=col, ms=3, label=name)
    ax[2].semilogy(ep_e, F, "o-", color=col, ms=3, label=name)
ax[0].set_ylabel("loss (each run's own weights)")
ax[1].set_ylabel("val energy RMSE (meV/atom)")
ax[2].set_ylabel("val force RMSE (meV/A)")
for a in ax:
    a.set_xlabel("epoch")
    a.grid(alpha=0.3)
ax[0].legend(fontsize=6)
ax[2].legend(fontsize=7)
fig.suptitle("C v7 call (continuing v6): every 5th epoch, from train.log")
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
