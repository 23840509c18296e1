"""The source tree's layout rules (../shared/STYLE.md 1, 20, 21, 24; DESIGN.md section 4), read
off the files themselves: the kernel folder includes no LAMMPS header, product code reads the
environment only for the documented debugging switches, no kernel keeps a selectable variant,
and no source comment cites a past run or a date."""
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("*.cpp", "*.hpp", "*.h", "*.cu")


def sources(*folders):
    for folder in folders:
        for pattern in SOURCES:
            yield from sorted((REPO / folder).rglob(pattern))


def test_kernel_headers_include_only_kernel_headers_and_kokkos():
    # Quoted includes must name a file of kokkos/ itself (so never a LAMMPS or engine header, and
    # never a path that runs back up); angle includes are Kokkos' or the standard library's.
    kernel_files = {p.name for p in (REPO / "kokkos").iterdir()}
    bad = []
    for path in sources("kokkos"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = re.match(r'\s*#\s*include\s+([<"])([^>"]+)[>"]', line)
            if not m:
                continue
            kind, name = m.groups()
            if kind == '"' and name not in kernel_files:
                bad.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
            if kind == "<" and not (name.startswith("Kokkos_") or re.fullmatch(r"[a-z_]+", name)):
                bad.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_both_pair_styles_live_in_the_lammps_part():
    assert not list((REPO / "kokkos").glob("pair_*")), "pair styles belong in src/lammps"
    assert (REPO / "src/lammps/pair_edgeframe.cpp").exists()
    assert (REPO / "src/lammps/pair_edgeframe_kokkos.cpp").exists()


def test_getenv_only_for_the_documented_debugging_switches():
    readers = [p for p in sources("src", "kokkos") if "getenv" in p.read_text()]
    assert [p.relative_to(REPO).as_posix() for p in readers] == ["src/engine/debug_switches.cpp"], readers
    names = set(re.findall(r'"(EDGEFRAME_[A-Z_]+)"', (REPO / "src/engine/debug_switches.cpp").read_text()))
    assert names, "debug_switches.cpp reads no switch"
    table = (REPO / "doc/engine.md").read_text().split("## Debugging switches", 1)
    assert len(table) == 2, "doc/engine.md has no section 'Debugging switches'"
    for name in names:
        assert f"`{name}" in table[1], f"{name} is not listed in doc/engine.md 'Debugging switches'"


def test_no_selectable_kernel_variants_remain():
    # One host and one device form of each edge-frame pass (kokkos/kernel_common.hpp KernelForm);
    # the loop-order switch and its orders are gone.
    text = "\n".join(p.read_text() for p in sources("src", "kokkos", "bench", "tests/unit"))
    for gone in ("LoopOrder", "EDGEFRAME_LOOP_ORDER", "TagBackwardEdgeLanes", "TagForwardLanes"):
        assert gone not in text, gone


def test_comments_cite_no_past_run_or_date():
    pattern = re.compile(r"20\d\d-\d\d-\d\d|\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|"
                         r"eleventh|twelfth) (run|session)\b|gpu-notes|doc/benchmarks", re.IGNORECASE)
    hits = [f"{p.relative_to(REPO)}:{n}: {line.strip()}"
            for p in sources("src", "kokkos", "bench")
            for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not hits, "\n".join(hits)
