"""The training regimes under their own names ("adam": Adam on the top layer; "end_to_end":
the kinds trained end to end) and the fields ``train_steps``, ``train_lr``, ``train_batch``,
with everything written under the old names ("sgd", ``sgd_*``) read as the new ones: old
configs load, old folders keep their fingerprint and resume without recomputing a row."""

import json

import pandas as pd
import pytest

from experiments.runner.rows import settings_fingerprint, settings_of, with_current_fits
from experiments.runner.specs import (ExperimentConfig, ModelSpec, TargetSpec, canonical_fit,
                                      with_current_names)
from experiments.runner.sweep import load_results, run_sweep

#: ``settings_fingerprint`` of ``_config()`` as the code before the rename computed it (with
#: ``fit="sgd", sgd_steps=30, sgd_batch=64, sgd_lr=0.01``): a folder written then must resume.
FINGERPRINT_BEFORE_RENAME = "62486c9d178c"


def _config(**changes) -> ExperimentConfig:
    fields = dict(name="legacy", preset="test", target=TargetSpec(n_inputs=4, degree=2),
                  models=(ModelSpec("dense", width=8), ModelSpec("sdmlp", width=16, k=4)),
                  seeds=(0, 1), n_train=256, n_eval=128, fit="adam", train_steps=30,
                  train_batch=64, train_lr=0.01)
    return ExperimentConfig(**{**fields, **changes})


def test_the_fingerprint_is_the_one_written_before_the_rename():
    config = _config()
    assert settings_fingerprint(config) == FINGERPRINT_BEFORE_RENAME
    # the fingerprint hashes the old spelling; every changed setting still changes it
    assert {"sgd_steps", "sgd_lr", "sgd_batch"} <= set(settings_of(config))
    assert settings_fingerprint(_config(train_steps=31)) != FINGERPRINT_BEFORE_RENAME
    assert settings_fingerprint(_config(train_lr=0.02)) != FINGERPRINT_BEFORE_RENAME


def test_old_names_load_as_the_new_ones():
    config = _config()
    old = {k: v for k, v in config.to_dict().items()
           if k not in ("train_steps", "train_lr", "train_batch")}
    old.update(fit="sgd", sgd_steps=30, sgd_lr=0.01, sgd_batch=64,
               panels={"a": {"x": "width", "fit": "sgd"}})
    loaded = ExperimentConfig.from_dict(json.loads(json.dumps(old)))
    assert loaded.fit == "adam" and loaded.train_steps == 30 and loaded.train_batch == 64
    assert loaded.panels == {"a": {"x": "width", "fit": "adam"}}
    assert settings_fingerprint(loaded) == FINGERPRINT_BEFORE_RENAME
    assert _config(fit="sgd").fit == "adam"  # the old name of the regime, given directly


def test_an_old_name_and_its_new_one_that_disagree_are_refused():
    with pytest.raises(ValueError, match="sgd_steps.*train_steps"):
        with_current_names({"sgd_steps": 30, "train_steps": 31})
    assert with_current_names({"sgd_steps": 30, "train_steps": 30}) == {"train_steps": 30}


@pytest.mark.parametrize("fit, kind, expected", [
    ("sgd", "dense", "adam"), ("sgd", "lsh", "adam"), ("sgd", "sdmlp", "end_to_end"),
    ("sgd", "dense_mlp", "end_to_end"), ("sgd", None, "adam"), ("exact", "sdmlp", "exact"),
    ("adam", "dense", "adam")])
def test_canonical_fit_reads_sgd_by_the_rows_kind(fit, kind, expected):
    assert canonical_fit(fit, kind) == expected


def test_an_old_folder_resumes_without_recomputing(tmp_path):
    """A folder as the code before the rename wrote it (fit "sgd", config.json with sgd_*)
    resumes under the new names: no row is recomputed and the fits are read as today's."""
    config = _config(seeds=(0,))
    first = run_sweep([config], tmp_path, device="cpu", progress=False)
    assert set(first["fit"]) == {"adam", "end_to_end"}
    results = tmp_path / "results.csv"
    table = pd.read_csv(results, dtype={"settings": str})
    table["fit"] = "sgd"  # both regimes were written "sgd" before
    table.to_csv(results, index=False)
    assert list(load_results(results)["fit"]) == list(first["fit"])
    wall = table["wall_s"].tolist()
    again = run_sweep([config], tmp_path, device="cpu", progress=False)
    assert len(again) == len(first) and again["wall_s"].tolist() == wall  # nothing rerun
    assert list(again["fit"]) == list(first["fit"])


def test_with_current_fits_leaves_new_tables_alone():
    table = pd.DataFrame({"fit": ["exact", "adam"], "model": ["dense", "dense"]})
    assert with_current_fits(table) is table
    with pytest.raises(TypeError, match="table"):
        with_current_fits([{"fit": "sgd"}])
