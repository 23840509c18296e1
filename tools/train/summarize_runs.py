#!/usr/bin/env python3
"""One table of finished training runs (train.py --out directories), for summary.txt.

    python3 tools/train/summarize_runs.py RUN_DIR [RUN_DIR ...]

Per run: shape, parameters, epochs / steps / seconds (s per step), best epoch, stop reason,
test and validation RMSEs (energy meV/atom, force meV/A, virial meV/atom) overall and per
family, and the issue #6 verdict (test E < 5 meV/atom and F < 100 meV/A). A run that left no
metrics.json is reported with the last lines of its log (RUN_DIR.log next to it).
"""
import json
import pathlib
import sys

TARGET_E, TARGET_F = 5.0, 100.0


def main(dirs):
    for d in map(pathlib.Path, dirs):
        print(f"== {d.name}")
        mfile, pfile = d / "metrics.json", d / "provenance.json"
        if not mfile.exists():
            log = d.parent / f"{d.name}.log"
            tail = log.read_text(errors="replace").splitlines()[-12:] if log.exists() else []
            print("   no metrics.json (run did not finish); log tail:")
            for line in tail:
                print("   | " + line[-160:])
            continue
        m = json.loads(mfile.read_text())
        t = m["training"]
        hist = json.loads((d / "history.json").read_text()) if (d / "history.json").exists() \
            else []
        cfg = {}
        best = d / "best.pt"
        if best.exists():
            try:
                import torch
                ck = torch.load(best, map_location="cpu")
                cfg = ck["cfg"]
                n_par = sum(v.numel() for v in ck["state"].values())
            except Exception as err:  # noqa: BLE001  (summary must not fail)
                n_par = f"? ({err})"
        shape = (f"C {cfg.get('channels')} T {cfg.get('layers')} lmax {cfg.get('lmax')} mmax "
                 f"{cfg.get('mmax')} r_cut {cfg.get('r_cut')} n_rbf {cfg.get('n_rbf')} "
                 f"params {n_par}") if cfg else "shape ?"
        sps = t["train_seconds"] / max(1, t["steps"])
        print(f"   {shape}")
        print(f"   {t['device']} batch {t['batch']} lr {t['lr']} epochs {t['epochs']} "
              f"(best {t['best_epoch']}) steps {t['steps']} in {t['train_seconds']} s "
              f"({sps:.3f} s/step incl. validation); {t['stop']}; wall {m.get('wall_seconds')} s")
        if hist:
            first, last = hist[0]["val"], hist[-1]["val"]
            print(f"   val E {first['energy_rmse_meV_atom']:.1f} -> {last['energy_rmse_meV_atom']:.2f}"
                  f" meV/atom, F {first['force_rmse_meV_A']:.0f} -> {last['force_rmse_meV_A']:.1f} "
                  f"meV/A (epoch 1 -> {hist[-1]['epoch']})")
        for split in ("test", "val", "train"):
            if split not in m:
                continue
            s = m[split]
            ok = s["energy_rmse_meV_atom"] < TARGET_E and s["force_rmse_meV_A"] < TARGET_F
            print(f"   {split:5s} E {s['energy_rmse_meV_atom']:7.2f} F {s['force_rmse_meV_A']:8.1f} "
                  f"W {s['virial_rmse_meV_atom']:7.1f}  (ref F rms {s['force_ref_rms_meV_A']:.0f})"
                  + (f"  target {'MET' if ok else 'missed'}" if split == "test" else ""))
        if "test" in m:
            print("   test per family:      frames      E        F        W")
            for fam, v in m["test"]["per_family"].items():
                print(f"     {fam:18s} {v['frames']:5d} {v['energy_rmse_meV_atom']:8.2f} "
                      f"{v['force_rmse_meV_A']:8.1f} {v['virial_rmse_meV_atom']:8.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
