"""The sparselab command line: --help, --version, the target gallery and reproduce."""

import json
import subprocess
import sys

import pandas as pd
import pytest
from click.testing import CliRunner

from experiments.cli import main
from experiments.pipeline.reproduce import run_reproduce


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
    from experiments.pipeline import reproduce

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


def test_reproduce_redoes_a_step_done_under_another_configuration(tmp_path, monkeypatch):
    # a step whose marker holds other settings (a preset changed in the code) is redone from
    # scratch: its results.csv, made under the old settings, is removed first
    from experiments.pipeline import reproduce

    settings, seen = {"value": "a"}, []

    def fake_steps(preset, device="auto"):
        def run(out):
            seen.append((out / "results.csv").exists())
            out.mkdir(parents=True, exist_ok=True)
            (out / "results.csv").write_text(settings["value"])
            return [out / "results.csv"]
        return [("scale", {"preset": preset, "settings": [settings["value"]]}, run)]

    monkeypatch.setattr(reproduce, "steps", fake_steps)
    monkeypatch.setattr(reproduce, "write_report", lambda *args: None)
    run_reproduce("tiny", tmp_path, echo=lambda s: None)
    run_reproduce("tiny", tmp_path, echo=lambda s: None)  # same settings: skipped
    assert seen == [False]
    settings["value"] = "b"
    messages = []
    run_reproduce("tiny", tmp_path, echo=messages.append)
    assert seen == [False, False] and "another configuration" in messages[0]
    assert (tmp_path / "scale" / "results.csv").read_text() == "b"


def _step_noting_kept_rows(seen: list):
    """A reproduce step that appends to ``seen`` whether its folder's results.csv was kept
    from an earlier run, then writes one."""
    def run(out):
        seen.append((out / "results.csv").exists())
        out.mkdir(parents=True, exist_ok=True)
        (out / "results.csv").write_text("rows")
        return [out / "results.csv"]
    return run


def test_reproduce_redoes_only_the_fits_when_a_fit_window_changes(tmp_path, monkeypatch):
    # the fit window changes no row (it is no setting of the fingerprint), but it changes the
    # fits: a step whose marker differs only there is rerun with its results.csv kept
    from experiments.pipeline import reproduce

    window, seen = {"value": [16, None]}, []

    def fake_steps(preset, device="auto"):
        return [("scale", {"preset": preset, "settings": ["a"],
                           reproduce.WINDOWS_KEY: [{"fit_window": {"x": window["value"]}}]},
                 _step_noting_kept_rows(seen))]

    monkeypatch.setattr(reproduce, "steps", fake_steps)
    monkeypatch.setattr(reproduce, "write_report", lambda *args: None)
    run_reproduce("tiny", tmp_path, echo=lambda s: None)
    run_reproduce("tiny", tmp_path, echo=lambda s: None)  # same window: skipped
    assert seen == [False]
    window["value"] = [32, None]
    messages = []
    run_reproduce("tiny", tmp_path, echo=messages.append)
    assert seen == [False, True] and "fit windows or control seeds changed" in messages[0]


def test_reproduce_keeps_rows_when_only_the_control_seeds_change(tmp_path, monkeypatch):
    # a marker written before control seeds (no CONTROLS_KEY) or with other control seeds:
    # the step reruns with its results.csv kept (the control rows it lacks are added); a
    # changed setting still redoes it from scratch
    from experiments.pipeline import reproduce

    plan, settings, seen = {"value": None}, {"value": "a"}, []

    def fake_steps(preset, device="auto"):
        config = {"preset": preset, "settings": [settings["value"]]}
        if plan["value"] is not None:
            config[reproduce.CONTROLS_KEY] = plan["value"]
        return [("scale", config, _step_noting_kept_rows(seen))]

    monkeypatch.setattr(reproduce, "steps", fake_steps)
    monkeypatch.setattr(reproduce, "write_report", lambda *args: None)
    run_reproduce("tiny", tmp_path, echo=lambda s: None)  # a marker without control seeds
    plan["value"] = [{"control_seeds": [3, 4], "control_models": ["dense;width=8"]}]
    messages = []
    run_reproduce("tiny", tmp_path, echo=messages.append)
    assert seen == [False, True] and "control seeds changed" in messages[0]
    run_reproduce("tiny", tmp_path, echo=lambda s: None)  # the same plan: skipped
    assert seen == [False, True]
    settings["value"] = "b"
    run_reproduce("tiny", tmp_path, echo=lambda s: None)
    assert seen == [False, True, False]  # another setting: redone from scratch


def test_reproduce_markers_record_each_configs_control_seeds():
    from experiments.papers.catalogue import experiment_configs
    from experiments.pipeline.reproduce import CONTROLS_KEY, control_plan, steps

    configs = {name: config for name, config, _ in steps("quick")}
    fig3 = experiment_configs("fig3", "quick")
    assert configs["fig3"][CONTROLS_KEY] == control_plan(fig3)
    assert configs["fig3"][CONTROLS_KEY][0]["control_seeds"] == list(fig3[0].control_seeds)
    assert configs["fig3"][CONTROLS_KEY][0]["control_seeds"]  # quick runs control seeds


def test_reproduce_markers_hold_each_configs_fit_window_and_window_rule():
    from experiments.papers.catalogue import experiment_configs
    from experiments.pipeline.reproduce import WINDOWS_KEY, fit_windows, steps

    configs = {name: config for name, config, _ in steps("tiny")}
    subspace = experiment_configs("subspace", "tiny")
    assert configs["subspace"][WINDOWS_KEY] == fit_windows(subspace)
    first = configs["subspace"][WINDOWS_KEY][0]
    assert first["fit_window"] == subspace[0].fit_window
    assert first["window_rules"] == {"a": subspace[0].panels["a"]["window_rule"]}
    moved = [subspace[0].with_(fit_window={"buckets": (8.0, None)})]
    assert fit_windows(moved) != fit_windows(subspace[:1])


def test_reproduce_steps_record_the_scaling_experiments_settings():
    from experiments.papers.catalogue import experiment_configs
    from experiments.pipeline.reproduce import steps
    from experiments.runner.rows import settings_fingerprint

    configs = {name: config for name, config, _ in steps("tiny")}
    assert configs["routers"]["settings"] == [settings_fingerprint(c)
                                              for c in experiment_configs("routers", "tiny")]


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


def _scale_configs(n_train):
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
    models = (ModelSpec("dense", width=8, label="dense"),
              ModelSpec("dsm", width=16, k=4, label="DSM"))
    return [ExperimentConfig(name="routers", preset="tiny", target=TargetSpec("polynomial"),
                             models=models, seeds=(0,), n_train=n_train, n_eval=200,
                             panels={"a": {"x": "activated_units", "models": ["dense", "DSM"]}})]


def test_scale_refuses_other_settings_resumes_the_same_and_force_starts_over(tmp_path,
                                                                              monkeypatch):
    from experiments.papers import catalogue
    from experiments.runner.rows import settings_fingerprint

    n_train = {"value": 300}
    monkeypatch.setattr(catalogue, "experiment_configs",
                        lambda name, preset: _scale_configs(n_train["value"]))
    args = ["scale", "--experiment", "routers", "--preset", "tiny", "--out", str(tmp_path),
            "--device", "cpu"]
    runner = CliRunner()
    assert runner.invoke(main, args).exit_code == 0
    results = tmp_path / "results.csv"
    first = results.read_bytes()

    assert runner.invoke(main, args).exit_code == 0  # same settings: resumed, nothing rerun
    assert results.read_bytes() == first

    n_train["value"] = 500
    refused = runner.invoke(main, args)
    assert refused.exit_code != 0
    assert "n_train 300 there, 500 now" in refused.output and "--force" in refused.output
    assert results.read_bytes() == first  # nothing reused, nothing added
    assert '"n_train": 300' in (tmp_path / "config.json").read_text()  # still the rows'

    forced = runner.invoke(main, args + ["--force"])
    assert forced.exit_code == 0, forced.output
    table = pd.read_csv(results, dtype={"settings": str})
    assert len(table) == 2
    assert set(table["settings"]) == {settings_fingerprint(_scale_configs(500)[0])}


def test_scale_writes_config_json_before_the_first_row(tmp_path, monkeypatch):
    """An interrupted sweep leaves a config.json that describes its rows, so that a later
    run under other settings can say which differ."""
    import json

    from experiments.papers import catalogue
    from experiments.cli import scale as scale_cli
    from experiments.runner import sweep

    seen = []

    def interrupted(configs, out, **kwargs):
        seen.append(json.loads((out / "config.json").read_text())["configs"][0]["n_train"])
        raise KeyboardInterrupt

    monkeypatch.setattr(catalogue, "experiment_configs", lambda name, preset: _scale_configs(321))
    monkeypatch.setattr(sweep, "run_sweep", interrupted)
    try:
        scale_cli.run_experiment("routers", "tiny", tmp_path, device="cpu", progress=False)
    except KeyboardInterrupt:
        pass
    assert seen == [321]


# -- sparselab plot: re-plot any results.csv --------------------------------------------------

def _plot_dir(tmp_path):
    """A handmade results.csv: two models, two seeds, three sizes, one unplottable row."""
    rows = [{"model_label": label, "activated_units": units, "seed": seed,
             "eval_nmse": scale / units * (1 + 0.1 * seed), "fit": "exact"}
            for label, scale in [("dense", 1.0), ("DSM", 0.5)] for seed in (0, 1)
            for units in (8, 16, 32)]
    rows.append({"model_label": "dense", "activated_units": 64, "seed": 0, "eval_nmse": 0.0,
                 "fit": "exact"})
    run = tmp_path / "run"
    run.mkdir()
    pd.DataFrame(rows).to_csv(run / "results.csv", index=False)
    return run


def test_plot_writes_png_and_svg_into_the_run_folder_or_to_out(tmp_path):
    run = _plot_dir(tmp_path)
    runner = CliRunner()
    result = runner.invoke(main, ["plot", str(run), "--x", "activated_units", "--y", "eval_nmse",
                                  "--by", "model_label"])
    assert result.exit_code == 0, result.output
    stem = run / "plot_eval_nmse_vs_activated_units_by_model_label"
    for path in (stem.with_suffix(".png"), stem.with_suffix(".svg")):
        assert path.stat().st_size > 0 and str(path) in result.output
    assert "left out 1 rows" in result.output  # the zero cannot sit on a log axis
    assert stem.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = tmp_path / "elsewhere" / "figure.png"
    out.parent.mkdir()
    result = runner.invoke(main, ["plot", str(run), "--x", "activated_units", "--y",
                                  "eval_nmse", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 0 and out.with_suffix(".svg").stat().st_size > 0
    # one line per group: the SVG holds both legend entries
    assert "DSM" in out.with_suffix(".svg").read_text()


def test_plot_out_an_existing_folder_writes_inside_it(tmp_path):
    run = _plot_dir(tmp_path)
    folder = tmp_path / "figures"
    folder.mkdir()
    result = CliRunner().invoke(main, ["plot", str(run), "--x", "activated_units", "--y",
                                       "eval_nmse", "--out", str(folder)])
    assert result.exit_code == 0, result.output
    stem = folder / "plot_eval_nmse_vs_activated_units_by_model_label"
    for path in (stem.with_suffix(".png"), stem.with_suffix(".svg")):
        assert path.stat().st_size > 0 and str(path) in result.output
    # nothing beside the folder
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["figures", run.name])


def test_plot_errors_are_one_line_and_name_what_is_missing(tmp_path):
    run = _plot_dir(tmp_path)
    runner = CliRunner()

    def error(*args):
        result = runner.invoke(main, ["plot", *map(str, args)])
        assert result.exit_code == 1 and result.output.startswith("Error: "), result.output
        assert result.output.count("\n") == 1 and "Usage" not in result.output
        return result.output

    message = error(run, "--x", "activated_unit", "--y", "eval_nmse")
    assert "'activated_unit'" in message and "--x" in message
    assert "available: model_label, activated_units, seed, eval_nmse, fit" in message
    assert "'target'" in error(run, "--x", "activated_units", "--y", "eval_nmse", "--by",
                               "target")
    assert "not numeric" in error(run, "--x", "activated_units", "--y", "fit")
    assert "does not exist" in error(tmp_path / "missing", "--x", "a", "--y", "b")
    (tmp_path / "empty").mkdir()
    assert "results.csv does not exist" in error(tmp_path / "empty", "--x", "a", "--y", "b")
    assert ".png or .svg" in error(run, "--x", "activated_units", "--y", "eval_nmse", "--out",
                                   tmp_path / "figure.pdf")


def test_plot_is_listed_in_help():
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0 and "plot" in result.output


def _two_fake_steps(ran):
    """``reproduce.steps`` cut to two steps, "a" and "b", each writing one file and noting
    that it ran in ``ran``."""
    def step(name):
        def run(out):
            ran.append(name)
            out.mkdir(parents=True, exist_ok=True)
            (out / "table.md").write_text(f"# {name}\n{name} body")
            return [out / "table.md"]
        return run

    def fake_steps(preset, device="auto", workers=None, scheduler=None):
        return [("a", {"preset": preset}, step("a")), ("b", {"preset": preset}, step("b"))]
    return fake_steps


def test_reproduce_only_runs_the_named_steps_and_reports_the_others_done(tmp_path,
                                                                        monkeypatch):
    """``only``: the named steps run; the report keeps the other steps already done in the
    folder (an earlier run of them) and names the rest as not run."""
    from experiments.pipeline import reproduce

    ran = []
    monkeypatch.setattr(reproduce, "steps", _two_fake_steps(ran))
    written = run_reproduce("tiny", tmp_path, echo=lambda s: None, only=("b",))
    assert ran == ["b"] and list(written) == ["b"] and not (tmp_path / "a").exists()
    index = json.loads((tmp_path / "index.json").read_text())
    assert index["not_run"] == ["a"] and list(index["steps"]) == ["b"]
    report = (tmp_path / "report.md").read_text()
    assert "not run: `--only` left them out): `a`." in report and "b body" in report
    # then "a" alone: "b" is done (same configuration), so the report holds both, in order
    written = run_reproduce("tiny", tmp_path, echo=lambda s: None, only="a")
    assert ran == ["b", "a"] and list(written) == ["a", "b"]
    index = json.loads((tmp_path / "index.json").read_text())
    assert "not_run" not in index and list(index["steps"]) == ["a", "b"]
    report = (tmp_path / "report.md").read_text()
    assert "Not in this report" not in report and "a body" in report and "b body" in report
    # every step, already done: nothing runs
    assert list(run_reproduce("tiny", tmp_path, echo=lambda s: None)) == ["a", "b"]
    assert ran == ["b", "a"]


@pytest.mark.slow
def test_reproduce_only_with_workers_runs_the_named_steps_there(tmp_path, monkeypatch):
    from experiments.pipeline import reproduce

    ran = []
    monkeypatch.setattr(reproduce, "steps", _two_fake_steps(ran))
    written = run_reproduce("tiny", tmp_path, echo=lambda s: None, only=("a",), workers=1)
    assert list(written) == ["a"] and (tmp_path / "a" / "done.json").exists()
    assert not (tmp_path / "b").exists()


def test_reproduce_only_refuses_unknown_or_no_steps(tmp_path):
    from experiments.pipeline.reproduce import check_only

    assert check_only(None, "tiny") is None
    assert check_only("fig2, sdm,fig2", "tiny") == ("fig2", "sdm")
    assert check_only(["checks"], "quick") == ("checks",)
    for bad in (("fig9",), "", [], ("cifar",)):  # no image steps at the paper preset
        with pytest.raises(ValueError, match="only must name steps of the"):
            check_only(bad, "paper")
    with pytest.raises(ValueError, match="only must be step names"):
        check_only(3, "tiny")
    with pytest.raises(ValueError, match="'nope'"):
        run_reproduce("tiny", tmp_path, only=("nope",))
    assert not any(tmp_path.iterdir())  # refused before anything was written


def test_reproduce_command_only_runs_one_step(tmp_path):
    result = CliRunner().invoke(main, ["reproduce", "--preset", "tiny", "--out", str(tmp_path),
                                       "--only", "sdm"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "sdm" / "done.json").exists() and not (tmp_path / "fig2").exists()
    assert "`fig2`" in (tmp_path / "report.md").read_text()
    result = CliRunner().invoke(main, ["reproduce", "--preset", "tiny", "--out", str(tmp_path),
                                       "--only", "fig9"])
    assert result.exit_code != 0 and "only must name steps of the tiny preset" in result.output


# -- paper-sized runs: the estimate first, --yes above an hour ----------------------------------

def _estimate_of(seconds):
    """A stand-in for ``estimate_sweeps`` / ``estimate_reproduce`` returning ``seconds``."""
    from experiments.runner import time_estimate as estimate

    def fake(*args, **kwargs):
        return estimate.Estimate(seconds=seconds, low=seconds / 2, high=seconds * 2, rows=10,
                                 per_experiment={"fig2": (10, seconds)}, sampled=2,
                                 calibration_seconds=1.0, device="cpu", workers=1)
    return fake


def test_the_hour_threshold_and_the_checks_copy_of_it():
    from experiments.runner.time_estimate import CONFIRM_ABOVE_SECONDS, needs_yes
    from proofs_checks import run as checks_run

    assert CONFIRM_ABOVE_SECONDS == checks_run.CONFIRM_ABOVE_SECONDS == 3600.0
    assert not needs_yes(3599.0) and not needs_yes(3600.0) and needs_yes(3601.0)
    assert needs_yes(None)  # no estimate: counted as over an hour
    for bad in (-1.0, float("nan"), "1", True):
        with pytest.raises(ValueError, match="seconds must be a number >= 0 or None"):
            needs_yes(bad)


@pytest.mark.parametrize("preset", ["paper", "full"])
def test_scale_paper_prints_its_estimate_and_needs_yes_above_an_hour(tmp_path, monkeypatch,
                                                                     preset):
    from experiments.runner import time_estimate as estimate
    from experiments.cli import scale as scale_cli

    ran = []
    monkeypatch.setattr(scale_cli, "run_experiment",
                        lambda *args, **kwargs: ran.append(args) or ([], []))
    args = ["scale", "--experiment", "fig2", "--preset", preset, "--out", str(tmp_path / "o")]
    monkeypatch.setattr(estimate, "estimate_sweeps", _estimate_of(3700.0))
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and not ran and not (tmp_path / "o").exists()
    assert "Estimated time of this run on cpu: 1.0 h" in result.output
    assert result.output.index("Estimated time") < result.output.index("not started")
    assert ("not started: its estimated time, 1.0 h, exceeds an hour; nothing was computed. "
            "Rerun the same command with --yes to start it.") in result.output
    assert CliRunner().invoke(main, args + ["--yes"]).exit_code == 0 and len(ran) == 1
    assert ran[0][1] == "paper"  # "full" is the paper preset
    monkeypatch.setattr(estimate, "estimate_sweeps", _estimate_of(3500.0))
    result = CliRunner().invoke(main, args)  # under the hour: starts without --yes
    assert result.exit_code == 0 and len(ran) == 2
    assert "Estimated time of this run on cpu: 58 min" in result.output


def test_scale_quick_runs_without_an_estimate(tmp_path, monkeypatch):
    from experiments.runner import time_estimate as estimate
    from experiments.cli import scale as scale_cli

    ran = []
    monkeypatch.setattr(scale_cli, "run_experiment",
                        lambda *args, **kwargs: ran.append(args) or ([], []))
    monkeypatch.setattr(estimate, "estimate_sweeps", _estimate_of(1e6))
    result = CliRunner().invoke(main, ["scale", "--experiment", "fig2", "--preset", "quick",
                                       "--out", str(tmp_path)])
    assert result.exit_code == 0 and len(ran) == 1 and "Estimated" not in result.output


@pytest.mark.parametrize("preset", ["paper", "full"])
def test_reproduce_paper_needs_yes_above_an_hour(tmp_path, monkeypatch, preset):
    from experiments.pipeline import reproduce

    ran = []
    monkeypatch.setattr(reproduce, "_run_steps", lambda *args: ran.append(args) or {})
    args = ["reproduce", "--preset", preset, "--out", str(tmp_path / "r")]
    monkeypatch.setattr(reproduce, "estimate_reproduce", _estimate_of(3700.0))
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and not ran
    assert result.output.index("Estimated time of this run") < \
        result.output.index("not started: its estimated time, 1.0 h, exceeds an hour")
    assert "--yes" in result.output
    assert CliRunner().invoke(main, args + ["--yes"]).exit_code == 0 and len(ran) == 1
    assert ran[0][0] == "paper"
    monkeypatch.setattr(reproduce, "estimate_reproduce", _estimate_of(3500.0))
    assert CliRunner().invoke(main, args).exit_code == 0 and len(ran) == 2


def test_reproduce_paper_without_an_estimate_needs_yes(tmp_path, monkeypatch):
    from experiments.pipeline import reproduce

    def no_estimate(*args, **kwargs):
        raise ValueError("no GPU here")

    ran = []
    monkeypatch.setattr(reproduce, "_run_steps", lambda *args: ran.append(args) or {})
    monkeypatch.setattr(reproduce, "estimate_reproduce", no_estimate)
    result = CliRunner().invoke(main, ["reproduce", "--preset", "paper", "--out",
                                       str(tmp_path)])
    assert result.exit_code == 1 and not ran
    assert "no estimate of the run's time on this machine: no GPU here" in result.output
    assert "it has no time estimate (counted as over an hour)" in result.output


@pytest.mark.parametrize("preset", ["paper", "full"])
def test_check_paper_estimate_from_its_previous_run_and_yes(tmp_path, monkeypatch, preset):
    """The checks' paper estimate is the seconds of their previous paper run in --out; over
    an hour or unknown, the run needs --yes and computes nothing without it."""
    from proofs_checks import cli as checks_cli

    ran = []
    monkeypatch.setattr(checks_cli, "run_checks",
                        lambda *args, **kwargs: ran.append(args) or [])
    out = tmp_path / "checks"
    out.mkdir()
    args = ["check", "--preset", preset, "--out", str(out), "--only", "collisions",
            "--only", "eq1_flops"]
    result = CliRunner().invoke(main, args)  # no previous run: no estimate
    assert result.exit_code == 1 and not ran
    assert "no time estimate for 2 check(s)" in result.output and "--yes" in result.output

    def record(seconds):
        (out / "results.json").write_text(json.dumps({"params": "full", "results": [
            {"name": "collisions", "seconds": 1800.0},
            {"name": "eq1_flops", "seconds": seconds}]}))

    record(1801.0)  # 3601 s
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1 and not ran
    assert "Estimated time of the 2 check(s) at the paper preset: 1.0 h" in result.output
    assert ("not started: its estimated time, 1.0 h, exceeds an hour; nothing was computed. "
            "Rerun the same command with --yes to start it.") in result.output
    assert CliRunner().invoke(main, args + ["--yes"]).exit_code == 0 and len(ran) == 1
    assert ran[0][0] == "paper"
    record(1799.0)  # 3599 s: starts without --yes
    assert CliRunner().invoke(main, args).exit_code == 0 and len(ran) == 2
    # a quick run's seconds are no estimate of a paper run
    (out / "results.json").write_text(json.dumps({"params": "quick", "results": [
        {"name": "collisions", "seconds": 1.0}, {"name": "eq1_flops", "seconds": 1.0}]}))
    assert __import__('proofs_checks.run', fromlist=['x']).paper_estimate(["collisions", "eq1_flops"], out) is None


def test_scale_paper_estimates_only_the_rows_not_yet_in_the_folder(tmp_path, monkeypatch):
    """A resumed paper run is estimated on its rows still to compute: a model whose every
    seed is in results.csv is left out of the calibration, and every row is left in with
    --force."""
    from experiments.runner import time_estimate as estimate
    from experiments.cli import scale as scale_cli
    from experiments.runner import sweep
    from experiments.papers.catalogue import experiment_configs
    from experiments.runner.specs import fit_of

    seen = []

    def fake(experiments, **kwargs):
        seen.append(experiments)
        return _estimate_of(60.0)()

    monkeypatch.setattr(estimate, "estimate_sweeps", fake)
    monkeypatch.setattr(scale_cli, "run_experiment", lambda *args, **kwargs: ([], []))
    configs = experiment_configs("fig2", "paper")
    first, settings = configs[0].models[0], sweep.settings_fingerprint(configs[0])
    rows = [{"experiment": "fig2", "target": configs[0].target.label(),
             "model_key": first.key(), "fit": fit_of(first, configs[0]), "seed": seed,
             "settings": settings} for seed in configs[0].seeds]
    pd.DataFrame(rows, columns=sweep.COLUMNS).to_csv(tmp_path / "results.csv", index=False)
    args = ["scale", "--experiment", "fig2", "--preset", "paper", "--out", str(tmp_path)]
    assert CliRunner().invoke(main, args).exit_code == 0
    todo = seen[-1]["fig2"]
    assert [len(c.models) for c in todo] == [len(configs[0].models) - 1,
                                             *(len(c.models) for c in configs[1:])]
    assert first not in todo[0].models
    assert CliRunner().invoke(main, args + ["--force"]).exit_code == 0
    assert [c.models for c in seen[-1]["fig2"]] == [c.models for c in configs]
