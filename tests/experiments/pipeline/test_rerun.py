"""Rerunning a finished folder reuses its fits, plots and claims unless their inputs changed
(``experiments.pipeline.rerun``)."""

import json

import pytest

from experiments.pipeline import rerun
from experiments.papers.catalogue import experiment_configs
from experiments.pipeline.scale import run_experiment


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    out = tmp_path_factory.mktemp("table1")
    configs = experiment_configs("table1", "tiny")
    run_experiment("table1", "tiny", out, device="cpu", progress=False, configs=configs)
    return out, configs


def test_a_rerun_reuses_the_outputs(finished, monkeypatch):
    out, configs = finished
    record = json.loads((out / rerun.OUTPUTS_RECORD).read_text())
    assert "table.md" in record["files"] and "claims.csv" in record["files"]
    import experiments.pipeline.report as report

    def refuse(*args, **kwargs):
        raise AssertionError("outputs recomputed on an unchanged rerun")

    monkeypatch.setattr(report, "write_experiment_outputs", refuse)
    paths, claims = run_experiment("table1", "tiny", out, device="cpu", progress=False,
                                   configs=configs)
    assert {p.name for p in paths} >= {"table.md", "claims.csv", "fits.csv"}
    assert all(hasattr(c, "verdict") and hasattr(c, "claim") for c in claims)


def test_the_key_moves_with_rows_configs_and_claims(finished):
    out, configs = finished
    results = out / "results.csv"
    key = rerun.outputs_key("table1", configs, None, results)
    assert rerun.stored_outputs(out, key) is not None
    assert rerun.outputs_key("table1", configs, None, results) == key
    edited = [c.with_(train_steps=c.train_steps + 1) for c in configs]
    assert rerun.outputs_key("table1", edited, None, results) != key
    assert rerun.outputs_key("table1", configs, "none", results) != key
    copy = out.parent / "rows_copy.csv"
    copy.write_bytes(results.read_bytes() + b"\n")
    assert rerun.outputs_key("table1", configs, None, copy) != key
    assert rerun.stored_outputs(out, "0" * 64) is None


def test_a_missing_output_is_written_again(finished):
    out, configs = finished
    (out / "table.md").unlink()
    key = rerun.outputs_key("table1", configs, None, out / "results.csv")
    assert rerun.stored_outputs(out, key) is None
    paths, _ = run_experiment("table1", "tiny", out, device="cpu", progress=False,
                              configs=configs)
    assert (out / "table.md").is_file()


def test_unreadable_rows_name_the_file(tmp_path):
    with pytest.raises(ValueError, match="results"):
        rerun.outputs_key("x", [], None, tmp_path / "missing.csv")


def test_scale_says_its_preset_and_folder_first(finished):
    from click.testing import CliRunner

    from experiments.cli import main

    out, _ = finished
    result = CliRunner().invoke(main, ["scale", "--experiment", "table1", "--preset", "tiny",
                                       "--out", str(out), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert f"preset tiny, output folder {out}" in text
