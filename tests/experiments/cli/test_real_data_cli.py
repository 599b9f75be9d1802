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
    # tiny is a smoke test: the console says no verdict is meant, whatever claims.csv holds
    shown = [line for line in result.output.splitlines() if line.startswith("[")]
    assert len(shown) == len(claims)
    assert all(line.startswith("[smoke test, no verdict meant] ") for line in shown)


@pytest.mark.parametrize("preset, shown", [("tiny", "smoke test, no verdict meant"),
                                           ("quick", "supported")])
def test_the_console_prints_the_verdict_only_where_one_is_meant(tmp_path, monkeypatch,
                                                                 preset, shown):
    """The echo reads claims.csv: at quick its verdict, at tiny that none is meant (the
    experiment itself replaced by one that writes a claims.csv, so quick costs nothing)."""
    from experiments.papers import real_data
    from experiments.analysis.claims import CLAIM_COLUMNS

    def experiment(preset, out, **options):
        out.mkdir(parents=True, exist_ok=True)
        row = dict.fromkeys(CLAIM_COLUMNS, "")
        row.update(experiment="cifar", claim="A beats B", verdict="supported")
        pd.DataFrame([row], columns=CLAIM_COLUMNS).to_csv(out / "claims.csv", index=False)

    monkeypatch.setitem(real_data.EXPERIMENTS, "cifar", experiment)
    result = CliRunner().invoke(main, ["scale", "--experiment", "cifar", "--preset", preset,
                                       "--out", str(tmp_path / "o"), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert f"[{shown}] A beats B" in result.output


def test_paper_preset_needs_a_data_dir_and_bad_files_are_one_line(tmp_path):
    result = CliRunner().invoke(main, ["scale", "--experiment", "cifar", "--preset", "paper",
                                       "--out", str(tmp_path / "o"), "--device", "cpu"])
    assert result.exit_code == 1 and "--data-dir" in result.output
    assert "Traceback" not in result.output
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "test_batch.bin").write_bytes(b"\x00" * 100)
    result = CliRunner().invoke(main, ["scale", "--experiment", "cifar", "--preset", "paper",
                                       "--data-dir", str(tmp_path / "data"), "--out",
                                       str(tmp_path / "o"), "--device", "cpu", "--yes"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    # the estimate's line (none for the image runs), then the error on one line
    error = result.output.strip().splitlines()[-1]
    assert error.startswith("Error:") and str(tmp_path / "data") in error
    assert result.output.strip().count("\n") == 1 and "no time estimate" in result.output
