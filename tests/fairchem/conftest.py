"""pytest setup for the comparisons with fairchem itself: run with the fairchem venv's python
(scripts/test.sh does: $EDGEFRAME_FAIRCHEM_PYTHON -m pytest tests/fairchem)."""

import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
