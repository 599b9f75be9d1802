"""``sparselab scale --experiment cifar|continual|comet_images``: the image
experiments from the command line, on the digits scikit-learn ships."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from experiments.cli import main


@pytest.mark.parametrize("name", ["cifar", "continual", "comet_images"])
def test_tiny_image_experiment_from_the_command_line(tmp_path, name):
    out = tmp_path / name
    result = CliRunner().invoke(main, ["scale", "--experiment", name, "--preset", "tiny",
                                       "--seeds", "0,1", "--out", str(out), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "results.csv")
    assert sorted(set(table["seed"])) == [0, 1]
    claims = pd.read_csv(out / "claims.csv")
    assert len(claims) >= 1 and claims["verdict"].notna().all()
    assert f"[{claims['verdict'].iloc[0]}]" in result.output


def test_paper_preset_needs_a_data_dir_and_bad_files_are_one_line(tmp_path):
    result = CliRunner().invoke(main, ["scale", "--experiment", "cifar", "--preset", "paper",
                                       "--out", str(tmp_path / "o"), "--device", "cpu"])
    assert result.exit_code == 1 and "--data-dir" in result.output
    assert "Traceback" not in result.output
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test_batch.bin").write_bytes(b"\x00" * 100)
    result = CliRunner().invoke(main, ["scale", "--experiment", "cifar", "--preset", "paper",
                                       "--data-dir", str(tmp_path / "data"), "--out",
                                       str(tmp_path / "o"), "--device", "cpu"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert str(tmp_path / "data") in result.output
    assert result.output.strip().count("\n") == 0
