"""The sparselab command line: --help, --version, the target gallery and reproduce."""

import subprocess
import sys

import pandas as pd
from click.testing import CliRunner

from experiments.cli import main
from experiments.reproduce import run_reproduce


def test_help_and_version():
    runner = CliRunner()
    result = runner.invoke(main, ["--help"])
    assert result.exit_code == 0 and "targets" in result.output and "reproduce" in result.output
    result = runner.invoke(main, ["--version"])
    assert result.exit_code == 0 and "sparselab, version 0.1.0" in result.output


def test_console_script_is_installed():
    out = subprocess.run([sys.executable, "-m", "experiments.cli", "--version"],
                         capture_output=True, text=True, check=True)
    assert "sparselab" in out.stdout


def test_targets_gallery_writes_files_with_ratios_below_one(tmp_path):
    result = CliRunner().invoke(main, ["targets", "--out", str(tmp_path), "--n-seeds", "2",
                                       "--n-inputs", "4"])
    assert result.exit_code == 0, result.output
    for name in ["target_slices.png", "lipschitz_ratios.png", "lipschitz_ratios.csv",
                 "config.json"]:
        assert (tmp_path / name).stat().st_size > 0
    table = pd.read_csv(tmp_path / "lipschitz_ratios.csv")
    assert len(table) == 3 * 2
    assert (table["ratio"] <= 1.0 + 1e-9).all() and (table["ratio"] > 0).all()
    # the hypercube certificate is exact and the corners are in the sample: ratio 1
    cube = table[table["family"].str.startswith("RandomHypercubeFunction")]
    assert (cube["ratio"] > 1 - 1e-9).all()


def test_reproduce_resumes_without_redoing_finished_steps(tmp_path, monkeypatch):
    calls = []
    from experiments import reproduce

    def fake_steps(preset, device="auto"):
        def run(out):
            calls.append(preset)
            out.mkdir(parents=True, exist_ok=True)
            (out / "x.txt").write_text("x")
            return [out / "x.txt"]
        return [("step", {"preset": preset}, run)]

    monkeypatch.setattr(reproduce, "steps", fake_steps)
    monkeypatch.setattr(reproduce, "write_report", lambda *args: None)
    assert run_reproduce("quick", tmp_path, echo=lambda s: None) == {"step": ["step/x.txt"]}
    run_reproduce("quick", tmp_path, echo=lambda s: None)
    assert calls == ["quick"]  # second run skipped the finished step
    run_reproduce("quick", tmp_path, force=True, echo=lambda s: None)
    assert calls == ["quick", "quick"]


def test_comet_similarity_command_writes_a_positive_rank_correlation(tmp_path):
    result = CliRunner().invoke(main, ["comet", "similarity", "--preset", "tiny",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    summary = pd.read_csv(tmp_path / "similarity_summary.csv")
    sparse = summary[summary["p_k"] < 1]
    assert len(sparse) and (sparse["spearman_mask"] > 0.5).all()
    assert (tmp_path / "comet_similarity.png").stat().st_size > 0


def test_comet_command_rejects_an_unknown_study(tmp_path):
    result = CliRunner().invoke(main, ["comet", "overlap", "--out", str(tmp_path)])
    assert result.exit_code != 0 and "similarity" in result.output
