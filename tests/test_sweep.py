"""Sweeps: resumable results, bad input, the LSH-table learner on a subspace."""

import numpy as np
import pandas as pd
import pytest
import torch

from experiments.presets import experiment_configs
from experiments.sweep import COLUMNS, resolve_device, run_sweep


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
