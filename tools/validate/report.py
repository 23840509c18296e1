"""<out>/report.md and <out>/results.json of the validation suite."""
import json
import math

from lmp import Failed


def num(x, unit=""):
    if x is None:
        return ""
    if isinstance(x, str):
        return x
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    s = f"{x:.6g}" if abs(x) >= 1e-3 or x == 0 else f"{x:.3e}"
    return f"{s} {unit}".strip()


def verdict(p):
    return {True: "pass", False: "**FAIL**", None: "-"}[p]


def error_text(row):
    e = row["error"]
    if e is None or isinstance(e, str):
        return e or ""
    if row["error_unit"] == "%":
        return f"{e:+.3g} %"
    return f"{e:+.3g} {row['error_unit']}".strip()


def counts(rows):
    judged = [r for r in rows if r["pass"] is not None]
    return sum(r["pass"] for r in judged), len(judged)


def jsonable(x):
    if isinstance(x, Failed):
        return repr(x)
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if hasattr(x, "tolist"):
        return jsonable(x.tolist())
    if hasattr(x, "__fspath__"):
        return str(x)
    return x


def write(out, meta, sections):
    (out / "results.json").write_text(json.dumps(jsonable(dict(meta=meta, sections=sections)),
                                                 indent=1) + "\n")
    model = ("the reference itself (--self-check: every error must be 0)" if meta.get("self_check")
             else f"`pair_style edgeframe precision {meta['precision']}`, potential "
             f"`{meta['potential']}` (sha256 `{meta['sha256'][:16]}...`)")
    lines = [f"# Validation of `{meta['potential']}` ({meta['element']})", "",
             f"Model: {model}. Reference: "
             f"`{meta['reference']}`. Both run in LAMMPS on the same structures "
             f"({'--quick sizes' if meta['quick'] else 'full sizes'}); method of every section: "
             "doc/validation.md.", "",
             f"Command: `{meta['command']}`", "",
             "| section | passed | seconds |", "|---|---|---|"]
    for name, sec in sections.items():
        if "error" in sec:
            lines.append(f"| [{name}](#{name}) | **section failed** | {sec.get('seconds', 0):.0f} |")
            continue
        ok, n = counts(sec["rows"])
        lines.append(f"| [{name}](#{name}) | {ok} / {n} | {sec['seconds']:.0f} |")
    ok = sum(counts(s.get("rows", []))[0] for s in sections.values())
    n = sum(counts(s.get("rows", []))[1] for s in sections.values())
    lines += [f"| all | {ok} / {n} | {sum(s.get('seconds', 0) for s in sections.values()):.0f} |", ""]
    for name, sec in sections.items():
        lines += [f"## {name}", "", f"{sec.get('seconds', 0):.1f} s.", ""]
        if "error" in sec:
            lines += ["Section failed (an error of the suite, not of a LAMMPS run):", "", "```",
                      sec["error"].strip(), "```", ""]
            continue
        if sec.get("skipped"):
            lines += [f"Skipped: {sec['skipped']}.", ""]
            continue
        lines += ["| quantity | unit | model | reference | error | target | result | note |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in sec["rows"]:
            cells = [r["quantity"], r["unit"], num(r["model"]), num(r["reference"]), error_text(r),
                     r["target"] or "-", verdict(r["pass"]), r.get("note", "")]
            lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
        lines.append("")
        for p in sec.get("plots", []):
            lines += [f"![{p}]({p})", ""]
    (out / "report.md").write_text("\n".join(lines))
