"""Sweeps: resumable results, bad input, the LSH-table learner on a subspace."""

import numpy as np
import pandas as pd
import pytest
import torch

from experiments.papers.catalogue import experiment_configs
from experiments.runner.sweep import run_device, run_sweep
from experiments.runner.rows import COLUMNS, resolve_device


class Interrupt(Exception):
    pass


def _comparable(frame):
    return frame.drop(columns=["wall_s"]).sort_values(["target", "model_key", "seed"]) \
        .reset_index(drop=True)


def test_resumed_sweep_equals_uninterrupted(tmp_path):
    configs = experiment_configs("subspace", "tiny")
    full = run_sweep(configs, tmp_path / "full", device="cpu", progress=False)
    n_rows = sum(len(c.seeds) * len(c.models) for c in configs)
    assert len(full) == n_rows and list(full.columns) == COLUMNS

    count = {"rows": 0}

    def stop_after_three(row):
        count["rows"] += 1
        if count["rows"] == 3:
            raise Interrupt

    with pytest.raises(Interrupt):
        run_sweep(configs, tmp_path / "resumed", device="cpu", progress=False,
                  on_row=stop_after_three)
    assert len(pd.read_csv(tmp_path / "resumed" / "results.csv")) == 3  # nothing lost
    resumed = run_sweep(configs, tmp_path / "resumed", device="cpu", progress=False)
    on_disk = pd.read_csv(tmp_path / "resumed" / "results.csv")
    pd.testing.assert_frame_equal(_comparable(on_disk),
                                  _comparable(pd.read_csv(tmp_path / "full" / "results.csv")))
    assert len(resumed) == n_rows


def test_ctrl_c_says_how_many_rows_are_kept_and_that_a_rerun_resumes(tmp_path, monkeypatch,
                                                                      capsys):
    """Ctrl-C (a KeyboardInterrupt from the third fit) stops the sweep, says on stderr how
    many rows results.csv keeps and that the same command resumes, and lets the interrupt
    go on; the rerun computes only the rows not kept."""
    import experiments.runner.rows as rows
    import experiments.runner.sweep as sweep

    configs = experiment_configs("subspace", "tiny")
    n_rows = sum(len(c.seeds) * len(c.models) for c in configs)
    real, fits = rows.compute_row, []

    def fit_then_ctrl_c(*args, **kwargs):
        if len(fits) == 2:
            raise KeyboardInterrupt
        fits.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep, "compute_row", fit_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(configs, tmp_path, device="cpu", progress=False)
    path = tmp_path / "results.csv"
    assert capsys.readouterr().err.strip() == (
        f"interrupted: 2 of {n_rows} rows are kept in {path}; rerun the same command to "
        f"resume (the rows kept are not computed again)")
    assert len(pd.read_csv(path)) == 2
    monkeypatch.setattr(sweep, "compute_row", real)
    new_rows = []
    run_sweep(configs, tmp_path, device="cpu", progress=False, on_row=new_rows.append)
    assert len(new_rows) == n_rows - 2 and len(pd.read_csv(path)) == n_rows


def test_lsh_table_error_falls_with_more_buckets(tmp_path):
    configs = experiment_configs("subspace", "tiny")[:1]
    frame = run_sweep(configs, tmp_path, device="cpu", progress=False)
    by_buckets = frame.groupby("buckets")["eval_mse"].mean().sort_index()
    assert by_buckets.iloc[-1] < by_buckets.iloc[0]
    assert (frame["nonempty_buckets"] == frame["buckets"]).all()
    assert np.isfinite(frame["linf_error"]).all()


def test_bad_names_and_devices():
    with pytest.raises(ValueError, match="experiment must be one of"):
        experiment_configs("fig9", "quick")
    with pytest.raises(ValueError, match="preset must be one of"):
        experiment_configs("fig2", "huge")
    with pytest.raises(ValueError, match="device must be one of"):
        resolve_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="cuda"):
            resolve_device("cuda")


def test_the_run_device_is_resolved_here_unless_the_rows_go_to_an_existing_cluster():
    assert run_device("cpu") == torch.device("cpu")
    assert run_device("auto") == resolve_device("auto")
    # on a cluster each worker resolves it: "cuda" from a driver without a GPU is no error
    for name in ("auto", "cpu", "cuda"):
        assert run_device(name, "tcp://127.0.0.1:8786") == name
    with pytest.raises(ValueError, match="device must be one of"):
        run_device("tpu", "tcp://127.0.0.1:8786")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="cuda"):
            run_device("cuda")


def test_unwritable_out_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="not writable"):
        run_sweep(experiment_configs("subspace", "tiny"), blocker / "sub", device="cpu",
                  progress=False)


def test_rows_of_removed_models_are_left_out(tmp_path):
    configs = experiment_configs("subspace", "tiny")[:1]
    run_sweep(configs, tmp_path, device="cpu", progress=False)
    fewer = [configs[0].with_(models=configs[0].models[:1])]
    frame = run_sweep(fewer, tmp_path, device="cpu", progress=False)
    assert set(frame["model_key"]) == {configs[0].models[0].key()}
    assert len(pd.read_csv(tmp_path / "results.csv")) == len(configs[0].seeds) * len(configs[0].models)


# -- settings fingerprints: a folder resumes only under the settings its rows were made with

def _small_config(**changes):
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
    models = (ModelSpec("dense", width=8, label="dense"),
              ModelSpec("dsm", width=16, k=4, label="DSM"))
    config = ExperimentConfig(name="fig4", preset="tiny", target=TargetSpec("polynomial"),
                              models=models, seeds=(0, 1), n_train=300, n_eval=200)
    return config.with_(**changes)


def _write_config_json(out, configs):
    import json
    (out / "config.json").write_text(json.dumps({"configs": [c.to_dict() for c in configs]}))


def test_settings_fingerprint_is_stable_and_covers_every_setting():
    import json
    import subprocess
    import sys

    from experiments.runner.specs import TargetSpec
    from experiments.runner.rows import settings_fingerprint

    config = _small_config()
    here = settings_fingerprint(config)
    # another process with another hash seed: the fingerprint is no Python hash()
    code = ("import sys; sys.path.insert(0, 'tests/experiments/runner'); from test_sweep import _small_config; "
            "from experiments.runner.sweep import settings_fingerprint; "
            "print(settings_fingerprint(_small_config()))")
    there = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**__import__("os").environ, "PYTHONHASHSEED": "123"})
    assert there.stdout.strip() == here and len(here) == 12
    # read back from config.json, ints where floats were: the same fingerprint
    assert settings_fingerprint(json.loads(json.dumps(config.to_dict()))) == here
    assert settings_fingerprint(config.with_(noise_std=0)) == here
    # what the row key already holds, or what changes no number: the same fingerprint
    for same in (dict(preset="quick"), dict(seeds=(5,)), dict(models=config.models[:1]),
                 dict(panels={"a": {}}), dict(fit_window={"activated_units": (8, None)})):
        assert settings_fingerprint(config.with_(**same)) == here, same
    for changed in (dict(n_train=301), dict(n_eval=201), dict(noise_std=0.1),
                    dict(train_steps=7), dict(train_lr=0.5), dict(train_batch=3), dict(ridge=1.0),
                    dict(target=TargetSpec("polynomial", seed=1))):
        assert settings_fingerprint(config.with_(**changed)) != here, changed


@pytest.mark.parametrize("setting, value", [("n_train", 400), ("train_steps", 7)])
def test_resuming_under_changed_settings_is_refused_and_names_them(tmp_path, setting, value):
    config = _small_config()
    first = run_sweep([config], tmp_path, device="cpu", progress=False)
    _write_config_json(tmp_path, [config])
    before = (tmp_path / "results.csv").read_bytes()
    changed = config.with_(**{setting: value})
    with pytest.raises(ValueError) as error:
        run_sweep([changed], tmp_path, device="cpu", progress=False)
    message = str(error.value)
    old = getattr(config, setting)
    assert str(tmp_path / "results.csv") in message
    assert f"{setting} {old} there, {value} now" in message
    assert "--out" in message and "--force" in message
    assert (tmp_path / "results.csv").read_bytes() == before  # nothing reused or added
    assert len(first) == 4


def test_same_settings_resume_without_rerunning_and_force_starts_over(tmp_path):
    from experiments.runner.rows import settings_fingerprint

    config = _small_config()
    first = run_sweep([config], tmp_path, device="cpu", progress=False)
    new_rows = []
    again = run_sweep([config], tmp_path, device="cpu", progress=False, on_row=new_rows.append)
    assert new_rows == [] and len(again) == len(first) == 4
    assert set(again["settings"]) == {settings_fingerprint(config)}

    changed = config.with_(n_train=400)
    forced = run_sweep([changed], tmp_path, device="cpu", progress=False, force=True,
                       on_row=new_rows.append)
    on_disk = pd.read_csv(tmp_path / "results.csv", dtype={"settings": str})
    assert len(new_rows) == 4 and len(on_disk) == 4  # every row anew, the old ones gone
    assert set(on_disk["settings"]) == set(forced["settings"]) == {settings_fingerprint(changed)}
    # more training data: different numbers from the first run
    assert not np.allclose(forced["eval_mse"], first["eval_mse"])


def test_rows_written_before_settings_were_recorded_are_refused(tmp_path):
    config = _small_config()
    run_sweep([config], tmp_path, device="cpu", progress=False)
    path = tmp_path / "results.csv"
    pd.read_csv(path).drop(columns=["settings"]).to_csv(path, index=False)
    _write_config_json(tmp_path, [config.with_(n_train=999)])
    with pytest.raises(ValueError, match="before rows recorded their settings") as error:
        run_sweep([config], tmp_path, device="cpu", progress=False)
    assert "n_train 999 there, 300 now" in str(error.value)
    # rows of another experiment in the same folder: refused, naming it
    other = config.with_(name="fig2")
    with pytest.raises(ValueError, match="4 rows of experiment 'fig4'"):
        run_sweep([other], tmp_path, device="cpu", progress=False)


# -- normalised errors: every row carries them; older tables resume and get them

def test_rows_carry_eval_and_train_nmse_over_their_own_labels(tmp_path):
    from experiments.runner.rows import _make_data

    config = _small_config(noise_std=0.01)
    frame = run_sweep([config], tmp_path, device="cpu", progress=False)
    for _, row in frame.iterrows():
        X, y, X_eval, y_eval = _make_data(config, int(row["seed"]))
        assert row["eval_nmse"] == pytest.approx(row["eval_mse"] / np.var(y_eval), rel=1e-12)
        assert row["train_nmse"] == pytest.approx(row["train_mse"] / np.var(y), rel=1e-12)
    assert {"train_nmse", "eval_nmse"} <= set(pd.read_csv(tmp_path / "results.csv").columns)


def test_results_without_nmse_columns_resume_and_get_them_without_refitting(tmp_path):
    from experiments.runner.sweep import load_results

    config = _small_config()
    first = run_sweep([config], tmp_path, device="cpu", progress=False)
    path = tmp_path / "results.csv"
    # a results.csv written before the normalised columns existed, with a row of a model
    # this sweep no longer runs
    old = pd.read_csv(path).drop(columns=["train_nmse", "eval_nmse"])
    extra = old.iloc[[0]].assign(model_key="dense;width=999", model_label="gone")
    pd.concat([old, extra]).to_csv(path, index=False)
    assert load_results(path)["eval_nmse"].isna().all()  # loads, the columns empty

    new_rows = []
    again = run_sweep([config], tmp_path, device="cpu", progress=False, on_row=new_rows.append)
    assert new_rows == []  # nothing refitted
    np.testing.assert_allclose(again["eval_nmse"], first["eval_nmse"], rtol=1e-12)
    np.testing.assert_allclose(again["train_nmse"], first["train_nmse"], rtol=1e-12)
    on_disk = load_results(path)
    ours = on_disk["model_label"] != "gone"
    assert on_disk.loc[ours, ["eval_nmse", "train_nmse"]].notna().all().all()
    assert on_disk.loc[~ours, "eval_nmse"].isna().all()  # not this sweep's: left empty


def test_rows_of_interleaved_seeds_share_their_data_sets(monkeypatch):
    """A worker gets rows of several sweeps and seeds in turn: each (config, seed) data set is
    drawn once while it is among the ``DATA_CACHE_SIZE`` last used, and is the same data."""
    from experiments.runner import rows
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec

    config = ExperimentConfig(name="cache", preset="tiny", target=TargetSpec("polynomial"),
                              models=(ModelSpec("dense", width=4),), seeds=(0, 1),
                              n_train=50, n_eval=20)
    drawn = []
    make = rows._make_data
    monkeypatch.setattr(rows, "_make_data", lambda c, s: drawn.append(s) or make(c, s))
    monkeypatch.setattr(rows, "_last_data", type(rows._last_data)())
    first = [rows.cached_data(config, s) for s in (0, 1, 0, 1)]
    assert drawn == [0, 1] and first[2] is first[0] and first[3] is first[1]
    for seed in range(2, 2 + rows.DATA_CACHE_SIZE):  # seed 0 becomes the least recent
        rows.cached_data(config, seed)
    again = rows.cached_data(config, 0)
    assert drawn[-1] == 0 and len(drawn) == 3 + rows.DATA_CACHE_SIZE
    for a, b in zip(again, first[0]):  # drawn anew from its seed: the same numbers
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_specs_differing_only_in_n_tables_both_keep_their_rows_through_a_resume(tmp_path):
    """Two LSH specs alike but for n_tables (same label): a sweep stopped after the first row
    and resumed computes the second and keeps both, each the row its own spec gives alone. A
    row key blind to n_tables would take the second for the first, done already."""
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec

    one, two = (ModelSpec("lsh", n_bits=4, n_tables=t, family="sign", label="LSH")
                for t in (1, 2))
    config = ExperimentConfig(name="fig4", preset="tiny", target=TargetSpec("polynomial"),
                              models=(one, two), seeds=(0,), n_train=300, n_eval=200)
    computed = []

    def stop_after_the_first(row):
        computed.append(row["model_key"])
        raise Interrupt

    with pytest.raises(Interrupt):
        run_sweep([config], tmp_path / "resumed", device="cpu", progress=False,
                  on_row=stop_after_the_first)
    resumed = run_sweep([config], tmp_path / "resumed", device="cpu", progress=False,
                        on_row=lambda row: computed.append(row["model_key"]))
    assert computed == [one.key(), two.key()]  # each computed once: the second on resuming
    on_disk = pd.read_csv(tmp_path / "resumed" / "results.csv")
    assert len(on_disk) == len(resumed) == 2
    for spec, (_, row) in zip((one, two), on_disk.iterrows()):
        alone = run_sweep([config.with_(models=(spec,))], tmp_path / f"alone{spec.n_tables}",
                          device="cpu", progress=False)
        assert row["model_key"] == spec.key()
        assert row["eval_mse"] == pytest.approx(alone["eval_mse"].iloc[0], rel=1e-12)
    assert on_disk["eval_mse"].iloc[0] != on_disk["eval_mse"].iloc[1]  # two models, two fits


# -- flags read by truthiness ----------------------------------------------------------------
def test_prepare_out_refuses_a_string_force_flag_not_read_by_truthiness():
    import pathlib

    from experiments.runner.sweep import prepare_out
    with pytest.raises(ValueError, match="must be True or False, got 'False'"):
        prepare_out([], pathlib.Path("/nonexistent/x"), "False")


def test_long_profile_flags_and_table_count_are_checked(tmp_path):
    """String flags of the sweep, the scale command's runner and the image experiments are
    refused, not read by truthiness; and n_tables=True is refused, not read as 1."""
    from experiments.papers import real_data
    from experiments.pipeline.scale import run_experiment
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec

    config = ExperimentConfig(name="flags", preset="test", target=TargetSpec(n_inputs=2),
                              models=(ModelSpec("dense", width=4),), seeds=(0,), n_train=20,
                              n_eval=10)
    for flag in ("progress", "force"):
        with pytest.raises(ValueError, match=flag):
            run_sweep([config], tmp_path / "a", device="cpu", **{flag: "False"})
        with pytest.raises(ValueError, match=flag):
            run_experiment("flags", "test", tmp_path / "b", device="cpu", configs=[config],
                           **{flag: "False"})
        with pytest.raises(ValueError, match=flag):
            real_data.run_cifar("tiny", tmp_path / "c", device="cpu", **{flag: "False"})
    with pytest.raises(ValueError, match="n_tables"):
        ModelSpec("dense", width=4, n_tables=True)
