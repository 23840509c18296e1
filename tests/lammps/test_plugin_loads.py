"""The plugin loads into a real LAMMPS, registers its styles and checks its input."""
import re
from pathlib import Path

import pytest

from reference_case import KOKKOS_ARGS

DIAMOND_BOX = """
units metal
atom_modify map array
boundary p p p
lattice diamond 3.567
region box block 0 2 0 2 0 2
create_box 1 box
create_atoms 1 box
mass 1 12.011
"""


def test_plugin_list_shows_host_and_kokkos_styles(lammps):
    run = lammps("plugin list\n")
    assert run.returncode == 0, run.output
    assert "pair style plugin edgeframe" in run.output
    assert "pair style plugin edgeframe/kk" in run.output


def test_pair_style_accepts_every_precision(lammps, tmp_path):
    # the tensor-core modes (tf32, bf16, tf32x3) are refused later, at init, on CPU builds
    for precision in ("fp64", "fp32", "tf32", "bf16", "tf32x3"):
        run = lammps(DIAMOND_BOX + f"pair_style edgeframe precision {precision}\n")
        assert run.returncode == 0, run.output


def test_unknown_keyword_is_named_with_the_valid_ones(lammps):
    run = lammps(DIAMOND_BOX + "pair_style edgeframe precison fp64\n")
    assert run.returncode != 0
    assert "unknown keyword 'precison'" in run.output and "valid: precision" in run.output


def test_unknown_precision_is_named(lammps):
    run = lammps(DIAMOND_BOX + "pair_style edgeframe precision fp16\n")
    assert run.returncode != 0
    assert "unknown precision 'fp16'" in run.output and "fp64, fp32, tf32, bf16, tf32x3" in run.output


def test_missing_potential_file_is_named(lammps):
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * no_such_model.safetensors C\n")
    assert run.returncode != 0
    assert "cannot open potential file no_such_model.safetensors" in run.output


def test_wrong_number_of_elements_is_reported(lammps, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * model.safetensors C C\n")
    assert run.returncode != 0
    assert "for each of the 1 atom types" in run.output


GOLDEN_MODEL = Path(__file__).resolve().parents[1] / "data" / "goldens" / "model_L2m1.safetensors"


def test_newton_off_is_refused_at_run(lammps):
    run = lammps("newton off\n" + DIAMOND_BOX + f"pair_style edgeframe\npair_coeff * * {GOLDEN_MODEL} C\nrun 0\n")
    assert run.returncode != 0
    assert "requires 'newton on'" in run.output


def test_newton_off_on_the_kokkos_host_data_path_names_the_package_option(lammps):
    # LAMMPS-KOKKOS on GPUs defaults to newton off; edgeframe/kk's host-data path (here: with
    # fold_images no) needs newton on, and the error says which command-line option sets it.
    run = lammps(DIAMOND_BOX + f"pair_style edgeframe fold_images no\npair_coeff * * {GOLDEN_MODEL} C\nrun 0\n",
                 args=(*KOKKOS_ARGS, "-pk", "kokkos", "newton", "off", "neigh", "full"))
    assert run.returncode != 0
    assert "requires 'newton on'" in run.output
    assert "-pk kokkos newton on neigh half" in run.output


@pytest.mark.parametrize("args", [(), KOKKOS_ARGS])
def test_neighbour_list_exclusions_are_refused(lammps, args):
    # A frozen slab set up the way a pair potential allows (neigh_modify exclude between its
    # atoms) would take those pairs out of the model's graph and change the forces on the atoms
    # that move: refused, with what to do instead.
    run = lammps(DIAMOND_BOX + "group low region box\nneigh_modify exclude group low low\n"
                 f"pair_style edgeframe\npair_coeff * * {GOLDEN_MODEL} C\nrun 0\n", args=args)
    assert run.returncode != 0
    assert "needs every pair within the cutoff" in run.output and "neigh_modify exclude" in run.output, run.output[-800:]


def test_a_directory_as_the_potential_file_is_named(lammps, tmp_path):
    (tmp_path / "model.safetensors").mkdir()
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * model.safetensors C\n")
    assert run.returncode != 0
    assert "potential file model.safetensors is not a regular file" in run.output, run.output[-800:]


@pytest.mark.parametrize("args", [(), KOKKOS_ARGS])
def test_an_element_a_v2_model_was_not_trained_on_is_refused(lammps, args):
    # A model v2 file has element tables for every Z below its max_num_elements, but the shipped
    # carbon potential was trained on carbon alone: its task gives copper no reference energy.
    v2 = Path(__file__).resolve().parents[2] / "potentials" / "C-diamond-v2.safetensors"
    run = lammps(DIAMOND_BOX + f"pair_style edgeframe\npair_coeff * * {v2} Cu\nrun 0\n", args=args)
    assert run.returncode != 0
    assert ("element Cu has no reference energy in task 'default'" in run.output
            and "not trained on it (elements with one: C)" in run.output), run.output[-800:]
    ok = lammps(DIAMOND_BOX + f"pair_style edgeframe\npair_coeff * * {v2} C\nrun 0\n", args=args)
    assert ok.returncode == 0, ok.output[-800:]


def test_corrupt_potential_file_is_named(lammps, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * model.safetensors C\n")
    assert run.returncode != 0
    assert "model.safetensors" in run.output and "pair_coeff edgeframe" in run.output


def test_truncated_potential_file_is_named(lammps, tmp_path):
    data = GOLDEN_MODEL.read_bytes()
    (tmp_path / "cut.safetensors").write_bytes(data[: len(data) // 2])
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * cut.safetensors C\n")
    assert run.returncode != 0
    assert "cut.safetensors" in run.output


def test_element_not_in_model_is_named_with_the_valid_ones(lammps):
    run = lammps(DIAMOND_BOX + f"pair_style edgeframe\npair_coeff * * {GOLDEN_MODEL} Si\n")
    assert run.returncode != 0
    assert "Si" in run.output and "C, Cu" in run.output


@pytest.mark.parametrize("fold,kokkos", [("yes", False), ("no", False), ("yes", True)])
def test_atoms_closer_than_min_distance_stop_the_run(lammps, fold, kokkos):
    # Two atoms 0.1 A apart (atom 1 at the origin, atom 65 added): the step, both atom IDs and
    # the distance are named and nothing is integrated; folded (periodic images onto owners)
    # and not (images as ghosts: another pair list), and edgeframe/kk's device path.
    script = DIAMOND_BOX + "create_atoms 1 single 0.1 0.1 0.1 units box\n"
    run = lammps(script + f"pair_style edgeframe fold_images {fold}\npair_coeff * * {GOLDEN_MODEL} C\n"
                 "fix 1 all nve\nrun 10\n", args=KOKKOS_ARGS if kokkos else ())
    if kokkos:
        assert "edgeframe/kk: device-resident path" in run.output, run.output[-1500:]
    assert run.returncode != 0
    assert "closer than min_distance 0.3 A" in run.output and "at step 0" in run.output, run.output[-1500:]
    assert re.search(r"atoms (1 and 65|65 and 1) are 0\.1732 A apart", run.output), run.output[-1500:]


def test_kokkos_suffix_selects_the_kk_style(lammps):
    run = lammps(DIAMOND_BOX + f"pair_style edgeframe\npair_coeff * * {GOLDEN_MODEL} C\nrun 0 post no\n",
                 args=KOKKOS_ARGS)
    assert "KOKKOS mode with Kokkos version 5.0.2" in run.output
    assert "edgeframe/kk" in run.output


def test_missing_atom_map_is_refused_with_the_fix(lammps):
    script = DIAMOND_BOX.replace("atom_modify map array\n", "")
    run = lammps(script + f"pair_style edgeframe\npair_coeff * * {GOLDEN_MODEL} C\nrun 0\n")
    assert run.returncode != 0
    assert "requires an atom map" in run.output and "atom_modify map array" in run.output
