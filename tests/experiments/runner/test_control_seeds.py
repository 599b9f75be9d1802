"""Control seeds (``ExperimentConfig.control_seeds``): seeds at which only the reference model
runs — checked on construction, no setting of the resume fingerprint, resumed like any row,
and kept apart from the run's rows (``run_rows``)."""

import json
import pathlib

import pandas as pd
import pytest

from experiments.runner.rows import settings_fingerprint, settings_of
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.sweep import control_rows, run_rows, run_sweep



class Interrupt(Exception):
    pass


def _config(**changes):
    dense = (ModelSpec("dense", width=8, label="dense"), ModelSpec("dense", width=32,
                                                                   label="dense"))
    models = dense + (ModelSpec("dsm", width=16, k=4, label="DSM"),)
    config = ExperimentConfig(name="fig4", preset="tiny", target=TargetSpec("polynomial"),
                              models=models, seeds=(0, 1), n_train=300, n_eval=200)
    return config.with_(**changes)


def _with_controls(config, seeds=(2, 3, 4)):
    return config.with_(control_seeds=seeds, control_models=config.models[:2])


def test_control_seeds_are_no_setting_of_the_fingerprint():
    plain = _config()
    controlled = _with_controls(plain)
    for config in (plain, controlled):
        assert not {"control_seeds", "control_models"} & set(settings_of(config))
    assert settings_fingerprint(controlled) == settings_fingerprint(plain)
    # read back from config.json: the same fingerprint, and the same config
    data = json.loads(json.dumps(controlled.to_dict()))
    assert settings_fingerprint(data) == settings_fingerprint(plain)
    back = ExperimentConfig.from_dict(data)
    assert back.control_seeds == (2, 3, 4) and back.control_models == controlled.control_models
    # a config.json written before control seeds existed reads back without them
    old = {k: v for k, v in plain.to_dict().items() if not k.startswith("control_")}
    assert ExperimentConfig.from_dict(json.loads(json.dumps(old))).control_seeds == ()


#: Each tiny and quick scaling config's fingerprint as the code wrote it before the control
#: seeds and the regimes' rename existed (computed by that code, commit f2f989e): every folder
#: written then must keep it.
FINGERPRINTS_BEFORE = pathlib.Path(__file__).parents[2] / "data" / \
    "fingerprints_before_controls.json"


def test_every_existing_folder_keeps_its_fingerprint():
    """The fingerprints of every scaling experiment's configs are those folders were written
    with before control seeds (and the adam / end_to_end names) existed: they resume."""
    from experiments.papers.catalogue import EXPERIMENTS, experiment_configs

    before = json.loads(FINGERPRINTS_BEFORE.read_text())
    now = {f"{n} {p} {i}": settings_fingerprint(c) for n in EXPERIMENTS
           for p in ("tiny", "quick") for i, c in enumerate(experiment_configs(n, p))}
    assert any(c.control_seeds for c in experiment_configs("fig3", "quick"))
    assert now == before
    # the check can fail: one changed setting changes a fingerprint
    config = experiment_configs("fig3", "quick")[0]
    assert settings_fingerprint(config.with_(n_train=config.n_train + 1)) != before[
        "fig3 quick 0"]


@pytest.mark.parametrize("changes, words", [
    (dict(control_seeds=(1, 2)), "disjoint from seeds"),
    (dict(control_seeds=(2, 2)), "distinct"),
    (dict(control_seeds=(2,), control_models=()), "come together"),
    (dict(control_seeds=(), control_models=(ModelSpec("dense", width=8),)), "come together"),
    (dict(control_seeds=(2,), control_models=(ModelSpec("dense", width=64),)),
     "one of the config's models"),
    (dict(control_seeds=(-1,)), "control_seeds"),
    (dict(control_seeds=(2,), control_models=("dense",)), "must be a ModelSpec"),
])
def test_bad_control_seeds_are_refused_naming_the_field(changes, words):
    changes = {"control_models": _config().models[:1], **changes}
    with pytest.raises(ValueError, match=words):
        _config(**changes)


def test_the_sweep_runs_only_the_control_models_at_a_control_seed(tmp_path):
    config = _with_controls(_config())
    frame = run_sweep([config], tmp_path, device="cpu", progress=False)
    at = {seed: sorted(rows["model_key"]) for seed, rows in frame.groupby("seed")}
    everything = sorted(m.key() for m in config.models)
    references = sorted(m.key() for m in config.control_models)
    assert at == {0: everything, 1: everything, 2: references, 3: references, 4: references}
    assert len(frame) == len(config.jobs()) == 2 * 3 + 3 * 2
    mask = control_rows(frame, [config])
    assert list(frame.loc[mask, "seed"].unique()) == [2, 3, 4]
    assert set(run_rows(frame, [config])["seed"]) == {0, 1}
    assert run_rows(frame, []).equals(frame)  # no configs: no row told apart
    # rows read back from results.csv: the same split
    on_disk = pd.read_csv(tmp_path / "results.csv", dtype={"settings": str})
    assert control_rows(on_disk, [config]).sum() == 6


def test_plot_finds_a_scale_folders_control_rows_from_its_config_json(tmp_path):
    """``sparselab plot`` leaves out the rows ``control_rows`` names, read from the
    ``config.json`` that ``sparselab scale`` writes, unless asked for them."""
    from experiments.cli.plot import control_rows_of, plot_results, read_results
    from experiments.pipeline.scale import run_experiment

    config = _with_controls(_config())
    run_experiment("fig4", "tiny", tmp_path, device="cpu", progress=False, configs=[config])
    rows = read_results(tmp_path)
    mask = control_rows_of(tmp_path, rows)
    assert (mask == control_rows(rows, [config])).all() and mask.sum() == 6
    assert plot_results(tmp_path, "activated_units", "eval_nmse")[1] == 6
    assert plot_results(tmp_path, "activated_units", "eval_nmse", controls=True)[1] == 0


def test_control_rows_resume_and_a_folder_without_them_gains_them(tmp_path):
    plain = _config()
    run_sweep([plain], tmp_path / "a", device="cpu", progress=False)
    controlled = _with_controls(plain)
    new = []
    frame = run_sweep([controlled], tmp_path / "a", device="cpu", progress=False,
                      on_row=new.append)
    # the folder made without control seeds resumes: only the control rows are computed
    assert sorted(r["seed"] for r in new) == [2, 2, 3, 3, 4, 4] and len(frame) == 12

    seen = []

    def stop_in_the_control_rows(row):
        seen.append(row)
        if len(seen) == 8:  # the 6 run rows, then 2 of the 6 control rows
            raise Interrupt

    with pytest.raises(Interrupt):
        run_sweep([controlled], tmp_path / "b", device="cpu", progress=False,
                  on_row=stop_in_the_control_rows)
    again = []
    resumed = run_sweep([controlled], tmp_path / "b", device="cpu", progress=False,
                        on_row=again.append)
    assert len(again) == 4 and all(r["seed"] in (3, 4) for r in again)
    keys = ["model_key", "seed"]
    pd.testing.assert_frame_equal(
        resumed.sort_values(keys).reset_index(drop=True)[keys + ["eval_mse"]],
        frame.sort_values(keys).reset_index(drop=True)[keys + ["eval_mse"]])


def test_new_run_seeds_that_meet_the_control_seeds_move_them_after_the_run():
    config = _with_controls(_config())  # seeds (0, 1), control seeds (2, 3, 4)
    assert config.with_(seeds=(0,)).control_seeds == (2, 3, 4)  # disjoint still: kept
    moved = config.with_(seeds=(0, 1, 2, 3))
    assert moved.seeds == (0, 1, 2, 3) and moved.control_seeds == (4, 5, 6)
    assert config.with_(seeds=(9, 3)).control_seeds == (10, 11, 12)
    with pytest.raises(ValueError, match="disjoint"):  # asked for explicitly: refused
        config.with_(seeds=(0, 1, 2), control_seeds=(2, 3))
