"""Experiments from a TOML file and data sets of one's own (docs/first_experiment.md)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from experiments.cli import main
from experiments.pipeline.config_file import (
    config_file_from_mapping,
    parse_seeds,
    read_config_file,
    with_overrides,
    write_toml,
)
from experiments.papers.presets import PRESETS
from experiments.papers.catalogue import EXPERIMENTS, experiment_configs
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.rows import canonical_value, settings_fingerprint

SMALL = """
experiment = "mine"
claims = "none"

[defaults]
seeds = [3, 5]
n_train = 300
n_eval = 100

[defaults.target]
family = "polynomial"
n_inputs = 6
degree = 3

[[configs]]
fit = "exact"

[[configs.models]]
kind = "dense"
width = 16

[[configs.models]]
kind = "dsm"
width = 64
k = 16
label = "DSM width 64"

[configs.panels.a]
x = "activated_units"
models = ["dense", "DSM width 64"]
"""


@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
@pytest.mark.parametrize("preset", PRESETS)
def test_every_preset_round_trips_through_toml(name, preset, tmp_path):
    """--print-config of any preset reads back to the same sweeps: same settings fingerprint
    (so a run from the file resumes the preset's folder), models, panels and fit window."""
    configs = experiment_configs(name, preset)
    path = tmp_path / "exp.toml"
    path.write_text(write_toml(name, preset, configs))
    back = read_config_file(path)
    assert back.experiment == name and back.preset == preset and back.claims == name
    assert len(back.configs) == len(configs)
    for old, new in zip(configs, back.configs):
        assert settings_fingerprint(new) == settings_fingerprint(old)
        assert new.models == old.models and new.name == old.name and new.seeds == old.seeds
        assert canonical_value(new.panels) == canonical_value(old.panels)
        assert new.fit_window == old.fit_window and new.fit == old.fit


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize("name", sorted(EXPERIMENTS))
def test_print_config_loads_back_to_the_same_fingerprints(name, preset, tmp_path):
    """`scale --print-config` → `--config`: the same sweeps, settings fingerprint first."""
    result = CliRunner().invoke(main, ["scale", "--experiment", name, "--preset", preset,
                                       "--print-config"])
    assert result.exit_code == 0, result.output
    path = tmp_path / "printed.toml"
    path.write_text(result.output)
    configs, back = experiment_configs(name, preset), read_config_file(path).configs
    assert [settings_fingerprint(c) for c in back] == [settings_fingerprint(c) for c in configs]
    for old, new in zip(configs, back, strict=True):
        assert new.models == old.models and new.fit_window == old.fit_window
        assert canonical_value(new.panels) == canonical_value(old.panels)


def test_printed_toml_says_each_thing_once_and_only_what_is_read():
    """fig2 quick: the exact regime's 60 models once under [defaults], the Adam regime's 33
    named by key; panels alike in both regimes once; no MLP widths under a polynomial; the
    fit window's place shown. table2 (an MLP target) keeps its widths; subspace its windows."""
    configs = experiment_configs("fig2", "quick")
    text = write_toml("fig2", "quick", configs)
    assert text.count("[[defaults.models]]") == len(configs[0].models) == 60
    assert "[[configs.models]]" not in text
    assert text.count('"dense;width=16;n_tables=1",') == 1  # the Adam regime's list of keys
    assert text.count('title = "DSM vs dense at equal activated units"') == 1
    assert "hidden" not in text and "degree = 4" in text
    assert "# fit_window = { activated_units = [16, inf] }" in text
    assert "hidden = [64, 64]" in write_toml("table2", "quick",
                                             experiment_configs("table2", "quick"))
    subspace = write_toml("subspace", "quick", experiment_configs("subspace", "quick"))
    assert "[configs.fit_window]" in subspace and "# fit_window" not in subspace


def test_a_regime_names_models_of_the_defaults_by_key(tmp_path):
    path = tmp_path / "keys.toml"
    keyed = SMALL.replace("[[configs]]\nfit = \"exact\"",
                          "[[configs]]\nfit = \"sgd\"\nmodels = [\"dense;width=16;n_tables=1\"]"
                          "\n\n[[configs]]\nfit = \"exact\"").replace(
        "[[configs.models]]", "[[defaults.models]]").replace(
        "[configs.panels.a]", "[defaults.panels.a]")
    path.write_text(keyed)
    sgd, exact = read_config_file(path).configs
    assert sgd.models == (ModelSpec("dense", width=16),) and len(exact.models) == 2
    path.write_text(keyed.replace("width=16;", "width=17;"))
    with pytest.raises(ValueError, match=r"configs\[0\]\.models\[0\]: 'dense;width=17;"
                                         r"n_tables=1' is not the key of a model under "
                                         r"\[defaults\] \(2 there"):
        read_config_file(path)


def test_a_small_file_reads_with_defaults_merged(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(SMALL)
    experiment = read_config_file(path)
    (config,) = experiment.configs
    assert experiment.claims == "none" and config.name == "mine"
    assert config.target == TargetSpec(n_inputs=6, degree=3)
    assert config.seeds == (3, 5) and config.n_train == 300 and config.train_steps == 2_000
    assert config.models[1] == ModelSpec("dsm", width=64, k=16, label="DSM width 64")


@pytest.mark.parametrize("edit, message", [
    (("width = 16", "widht = 16"), r"configs\[0\]\.models\[0\]: unknown field 'widht' "
                                   r"\(allowed: kind, width"),
    (("kind = \"dense\"", "kind = \"dens\""), r"configs\[0\]\.models\[0\]: model kind must be "
                                              r"one of \(.*'dense'"),
    (("width = 16", "width = 0"),
     r"configs\[0\]\.models\[0\]: width must be an integer >= 1, got 0"),
    (("degree = 3", "degre = 3"), r"configs\[0\]\.target: unknown field 'degre'"),
    (("family = \"polynomial\"", "family = \"poly\""), r"configs\[0\]\.target: family must be "
                                                       r"one of \('polynomial'"),
    (("n_train = 300", "n_train = -3"), r"configs\[0\]: n_train must be an integer >= 1"),
    (("seeds = [3, 5]", "seeds = [3, 3]"), r"configs\[0\]\.seeds must not repeat"),
    (("fit = \"exact\"", "fit = \"closed\""), r"configs\[0\]: fit must be one of"),
    (("claims = \"none\"", "claims = \"fig9\""), r"claims must be one of \("),
    (("experiment = \"mine\"", "experimant = \"mine\""), r"unknown field 'experimant' at the "
                                                         r"top level"),
])
def test_errors_name_the_field_and_the_allowed_values(tmp_path, edit, message):
    path = tmp_path / "bad.toml"
    path.write_text(SMALL.replace(*edit))
    with pytest.raises(ValueError, match=message) as error:
        read_config_file(path)
    assert str(path) in str(error.value)


def test_an_error_names_its_place_once(tmp_path):
    """The whole message of a misspelt field: the file, the place once, the field, the
    allowed fields."""
    path = tmp_path / "bad.toml"
    path.write_text(SMALL.replace("width = 16", "widht = 16"))
    with pytest.raises(ValueError) as error:
        read_config_file(path)
    assert str(error.value) == (
        f"config file {path}: configs[0].models[0]: unknown field 'widht' (allowed: kind, "
        f"width, k, n_bits, n_tables, n_hashes, bucket_width, n_experts, lr, label, family, "
        f"options)")


def test_invalid_toml_and_missing_file(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("experiment = \n")
    with pytest.raises(ValueError, match="is not valid TOML"):
        read_config_file(path)
    with pytest.raises(ValueError, match="cannot be read"):
        read_config_file(tmp_path / "absent.toml")
    with pytest.raises(ValueError, match="configs must be a non-empty array"):
        config_file_from_mapping({"experiment": "x"})


def test_overrides_and_seed_parsing():
    configs = experiment_configs("fig2", "tiny")
    changed = with_overrides(configs, seeds=(7,), n_train=50, n_eval=20)
    assert {(c.seeds, c.n_train, c.n_eval) for c in changed} == {((7,), 50, 20)}
    assert with_overrides(configs) == configs
    assert parse_seeds("0, 1,2") == (0, 1, 2)
    for bad in ("a,b", "-1", "1,1", ""):
        with pytest.raises(ValueError, match="seeds"):
            parse_seeds(bad)
    with pytest.raises(ValueError, match="n_train must be an integer >= 1"):
        with_overrides(configs, n_train=0)


def test_cli_runs_a_file_with_its_own_seeds_and_writes_its_folder(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(SMALL)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["scale", "--config", str(path), "--seeds", "1,2",
                                       "--out", str(out), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "results.csv")
    assert sorted(set(table["seed"])) == [1, 2] and len(table) == 4
    assert set(table["target"]) == {"poly(n=6, deg=3)"}
    recorded = json.loads((out / "config.json").read_text())
    assert recorded["experiment"] == "mine" and recorded["claims"] == "none"
    assert recorded["configs"][0]["seeds"] == [1, 2]
    assert (out / "claims.csv").read_text().count("\n") == 1  # claims = "none": the header


def test_cli_print_config_then_run_it(tmp_path):
    runner = CliRunner()
    printed = runner.invoke(main, ["scale", "--experiment", "fig2", "--preset", "tiny",
                                   "--print-config", "--seeds", "4"])
    assert printed.exit_code == 0, printed.output
    path = tmp_path / "fig2.toml"
    path.write_text(printed.output.replace("n_inputs = 8", "n_inputs = 6")
                    .replace("degree = 4", "degree = 3"))
    configs = read_config_file(path).configs
    assert {c.target.label() for c in configs} == {"poly(n=6, deg=3)"}
    assert {c.seeds for c in configs} == {(4,)}


@pytest.mark.parametrize("usage, message", [
    ([], "exactly one of --experiment NAME and --config"),
    (["--experiment", "fig2", "--seeds", "x"], "Invalid value for '--seeds'"),
    (["--experiment", "fig2", "--n-train", "0"], "Invalid value for '--n-train'"),
])
def test_cli_usage_errors_are_one_line(usage, message):
    result = CliRunner().invoke(main, ["scale", *usage])
    assert result.exit_code == 2 and message in result.output
    assert "Traceback" not in result.output


def test_cli_config_error_is_one_line(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(SMALL.replace("width = 16", "widht = 16"))
    result = CliRunner().invoke(main, ["scale", "--config", str(path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.strip().count("\n") == 0 and "widht" in result.output


# -- data sets of one's own ------------------------------------------------------------------

def _xy(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    return X, np.sin(X).sum(axis=1)


@pytest.mark.parametrize("suffix", [".npz", ".csv"])
def test_a_data_file_replaces_the_target(tmp_path, suffix):
    X, y = _xy()
    path = tmp_path / f"mine{suffix}"
    if suffix == ".npz":
        np.savez(path, X=X, y=y)
    else:
        pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}).to_csv(path,
                                                                                index=False)
    target = TargetSpec(family="data", path=str(path))
    assert target.n_inputs == 3 and len(target.sha256) == 64
    assert target.label() == f"data(mine{suffix}, n=3)"
    config = ExperimentConfig(name="own", preset="test", target=target,
                              models=(ModelSpec("dense", width=8),), seeds=(0,), n_train=250,
                              n_eval=150)
    X_train, y_train, X_eval, y_eval = config.make_data(0)
    assert X_train.shape == (250, 3) and X_eval.shape == (150, 3)
    # disjoint rows of the file, labels the file's
    rows = {tuple(np.round(r, 12)) for r in X}
    assert {tuple(np.round(r, 12)) for r in X_train} <= rows
    assert not ({tuple(r) for r in X_train} & {tuple(r) for r in X_eval})
    assert np.allclose(y_eval, np.sin(X_eval).sum(axis=1))
    again = config.make_data(0)
    assert all(np.array_equal(a, b) for a, b in zip(again, (X_train, y_train, X_eval, y_eval)))
    assert not np.array_equal(config.make_data(1)[0], X_train)
    with pytest.raises(ValueError, match="no target to build"):
        target.build()


def test_data_file_errors(tmp_path):
    X, y = _xy(n=10)
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=y)
    config = ExperimentConfig(name="own", preset="test",
                              target=TargetSpec(family="data", path=str(path)),
                              models=(ModelSpec("dense", width=8),), n_train=8, n_eval=5)
    with pytest.raises(ValueError, match=r"n_train \+ n_eval = 13 rows are more than data file"):
        config.make_data(0)
    np.savez(path, X=X, y=y[:-1])
    with pytest.raises(ValueError, match="one label per row"):
        TargetSpec(family="data", path=str(path))
    np.savez(path, X=X, labels=y)
    with pytest.raises(ValueError, match="must hold arrays 'X' and 'y'"):
        TargetSpec(family="data", path=str(path))
    X[0, 0] = np.nan
    np.savez(path, X=X, y=y)
    with pytest.raises(ValueError, match="X has 1 non-finite"):
        TargetSpec(family="data", path=str(path))
    np.savez(path, X=np.array([["a"]] * 3, dtype=object), y=np.zeros(3))
    with pytest.raises(ValueError, match="not a numpy .npz of numeric arrays"):
        TargetSpec(family="data", path=str(path))  # never unpickled
    csv = tmp_path / "d.csv"
    csv.write_text("a,b\n1,2\n3,4\n")
    with pytest.raises(ValueError, match="needs a column 'y'"):
        TargetSpec(family="data", path=str(csv))
    with pytest.raises(ValueError, match="does not exist"):
        TargetSpec(family="data", path=str(tmp_path / "none.npz"))
    with pytest.raises(ValueError, match=r"must end in one of \('.npz', '.csv'\)"):
        TargetSpec(family="data", path=str(tmp_path / "d.txt"))
    with pytest.raises(ValueError, match="path and sha256 are fields of family 'data' only"):
        TargetSpec(path=str(csv))


def test_a_changed_data_file_is_refused(tmp_path):
    X, y = _xy()
    path = tmp_path / "d.npz"
    np.savez(path, X=X, y=y)
    recorded = TargetSpec(family="data", path=str(path))
    np.savez(path, X=X, y=y + 1)
    with pytest.raises(ValueError, match="changed: its sha256 is"):
        TargetSpec(family="data", path=str(path), sha256=recorded.sha256)


def test_a_file_experiment_on_a_data_set(tmp_path):
    X, y = _xy()
    np.savez(tmp_path / "mine.npz", X=X, y=y)
    text = (SMALL.replace('family = "polynomial"\nn_inputs = 6\ndegree = 3',
                          'family = "data"\npath = "mine.npz"'))
    path = tmp_path / "exp.toml"
    path.write_text(text)
    (config,) = read_config_file(path).configs
    assert pathlib.Path(config.target.path) == tmp_path / "mine.npz"  # relative to the file
    result = CliRunner().invoke(main, ["scale", "--config", str(path), "--out",
                                       str(tmp_path / "out"), "--device", "cpu"])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(tmp_path / "out" / "results.csv")
    assert set(table["target"]) == {"data(mine.npz, n=3)"} and len(table) == 4
    assert (table["eval_nmse"] < 0.5).all()  # sin sums are easy for these models


def test_a_users_router_module_swept_from_a_file(tmp_path):
    """examples/own_router.py registers "hash_moe"; --module makes it usable in a file."""
    from experiments.kinds.registry import model_kind_names, unregister_model_kind

    example = pathlib.Path(__file__).parents[3] / "examples" / "own_router.py"
    text = SMALL.replace('[[configs.models]]\nkind = "dense"\nwidth = 16',
                         '[[configs.models]]\nkind = "hash_moe"\nwidth = 16\nk = 4\n'
                         'n_experts = 4\nlabel = "hash"')
    path = tmp_path / "mine.toml"
    path.write_text(text.replace("seeds = [3, 5]", "seeds = [3]"))
    try:
        result = CliRunner().invoke(main, ["scale", "--module", str(example), "--config",
                                           str(path), "--out", str(tmp_path / "out"),
                                           "--device", "cpu"])
        assert result.exit_code == 0, result.output
        table = pd.read_csv(tmp_path / "out" / "results.csv")
        assert list(table["model"]) == ["hash_moe", "dsm"] and table["eval_nmse"].notna().all()
        assert table.loc[0, "activated_units"] == 4 and table.loc[0, "fit"] == "end_to_end"
    finally:
        if "hash_moe" in model_kind_names():
            unregister_model_kind("hash_moe")
    no_kind = tmp_path / "empty.py"
    no_kind.write_text("x = 1\n")
    result = CliRunner().invoke(main, ["scale", "--module", str(no_kind), "--config",
                                       str(path)])
    assert result.exit_code == 1 and "registered no model kind" in result.output


def test_the_scale_commands_static_experiment_list_is_the_presets():
    from experiments.papers import real_data
    from experiments.cli.options import REAL_DATA_EXPERIMENTS, SCALE_EXPERIMENTS

    assert SCALE_EXPERIMENTS == tuple(sorted(EXPERIMENTS))
    assert REAL_DATA_EXPERIMENTS == tuple(sorted(real_data.EXPERIMENTS))
