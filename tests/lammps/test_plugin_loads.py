"""The plugin loads into a real LAMMPS, registers its styles and checks its input."""

DIAMOND_BOX = """
units metal
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
    for precision in ("fp64", "fp32", "tf32"):
        run = lammps(DIAMOND_BOX + f"pair_style edgeframe precision {precision}\n")
        assert run.returncode == 0, run.output


def test_unknown_keyword_is_named_with_the_valid_ones(lammps):
    run = lammps(DIAMOND_BOX + "pair_style edgeframe precison fp64\n")
    assert run.returncode != 0
    assert "unknown keyword 'precison'" in run.output and "valid: precision" in run.output


def test_unknown_precision_is_named(lammps):
    run = lammps(DIAMOND_BOX + "pair_style edgeframe precision fp16\n")
    assert run.returncode != 0
    assert "unknown precision 'fp16'" in run.output and "fp64, fp32, tf32" in run.output


def test_missing_potential_file_is_named(lammps):
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * no_such_model.safetensors C\n")
    assert run.returncode != 0
    assert "cannot open potential file 'no_such_model.safetensors'" in run.output


def test_wrong_number_of_elements_is_reported(lammps, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * model.safetensors C C\n")
    assert run.returncode != 0
    assert "for each of the 1 atom types" in run.output


def test_units_other_than_metal_are_refused_at_run(lammps, tmp_path):
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    script = DIAMOND_BOX.replace("units metal", "units real")
    run = lammps(script + "pair_style edgeframe\npair_coeff * * model.safetensors C\nrun 0\n")
    assert run.returncode != 0
    assert "requires 'units metal'" in run.output


def test_run_without_engine_stops_with_a_clear_error_and_no_thermo(lammps, tmp_path):
    # Until the evaluator is built in (issue #4) a run must stop, never integrate on fake forces.
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * model.safetensors C\nrun 1\n")
    assert run.returncode != 0
    assert "evaluator engine is not built into this plugin" in run.output
    assert "Step" not in run.output


def test_kokkos_suffix_run_stops_with_the_same_clear_error(lammps, tmp_path):
    # -sf kk selects edgeframe/kk (Kokkos OpenMP here); it must refuse to run just the same.
    (tmp_path / "model.safetensors").write_bytes(b"\0" * 16)
    run = lammps(DIAMOND_BOX + "pair_style edgeframe\npair_coeff * * model.safetensors C\nrun 1\n",
                 args=("-k", "on", "t", "1", "-sf", "kk"))
    assert run.returncode != 0
    assert "KOKKOS mode with Kokkos version 5.0.2" in run.output
    assert "evaluator engine is not built into this plugin" in run.output
    assert "Step" not in run.output
