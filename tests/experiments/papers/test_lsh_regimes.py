"""The LSH families and table counts of Figures 2–4, non-empty buckets
on the x-axis, and the two training regimes (exact least squares, Adam) of every
frozen-feature experiment, kept apart in rows, fits and figures."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from experiments.analysis.plots import experiment_figure, panel_rows, with_size
from experiments.papers.presets import EQUAL_UNITS_DENSE_LABEL, LSH_FAMILY_NAMES, LSH_TABLES, REGIMES, ADAM_BUDGET, UNIFORM_HASH_LABEL, lsh_label, regime_title
from experiments.papers.catalogue import experiment_configs
from experiments.analysis.scaling import FIT_COLUMNS
from experiments.analysis.fits import experiment_fits
from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec
from experiments.runner.sweep import run_sweep
from experiments.runner.rows import _make_data, run_model, settings_fingerprint
from routing.affine_hyperplane_lsh import AffineHyperplaneLSH

pytestmark = pytest.mark.usefixtures("one_thread")

FROZEN = ("fig2", "fig3", "fig4", "table1", "table2")


# -- presets --------------------------------------------------------------------------------

@pytest.mark.parametrize("preset", ["tiny", "quick", "paper"])
@pytest.mark.parametrize("name", FROZEN)
def test_frozen_experiments_run_in_both_regimes_with_one_budget(name, preset):
    configs = experiment_configs(name, preset)
    assert [c.fit for c in configs] == list(REGIMES) == ["exact", "adam"]
    exact, sgd = configs
    assert exact.target == sgd.target and exact.seeds == sgd.seeds
    budget = ADAM_BUDGET[preset]
    for config in configs:  # one Adam budget for every model of the experiment
        assert {k: getattr(config, k) for k in budget} == budget
    # the regimes differ only in the fit, which is in every row's key, not in the settings
    assert settings_fingerprint(exact) == settings_fingerprint(sgd)
    for config in configs:
        for spec in config.panels.values():
            assert spec["fit"] == config.fit
            # the regime is drawn from the config that ran, never copied into the title
            assert regime_title(config) not in spec["title"]
    assert regime_title(exact) == "exact least squares"
    assert regime_title(sgd).startswith(f"Adam, {budget['train_steps']} steps")


def test_quick_adam_budget_is_modest_and_the_same_for_dense_and_sparse():
    config = experiment_configs("fig2", "quick")[1]
    kinds = {m.kind for m in config.models}
    assert {"dense", "dsm", "lsh"} <= kinds
    assert config.train_steps * config.train_batch <= 15 * config.n_train  # ≈ 10 epochs


@pytest.mark.parametrize("preset", ["tiny", "quick"])
@pytest.mark.parametrize("name", ["fig2", "fig3"])
def test_figures_2_and_3_hold_every_family_and_table_count_and_a_uniform_hash(name, preset):
    exact = experiment_configs(name, preset)[0]
    lsh = [m for m in exact.models if m.kind == "lsh"]
    for family in LSH_FAMILY_NAMES:
        for s in LSH_TABLES:
            specs = [m for m in lsh if m.family == family and m.n_tables == s]
            assert len(specs) >= (4 if preset == "quick" else 2), (family, s)
            assert {m.label for m in specs} == {lsh_label(family, s)}
    uniform = [m for m in lsh if m.family == "uniform"]
    assert len(uniform) >= 2 and {m.n_tables for m in uniform} == {1}
    assert {m.label for m in uniform} == {UNIFORM_HASH_LABEL}
    assert len({m.key() for m in exact.models}) == len(exact.models)  # rows never collide
    labels = {label for spec in exact.panels.values() for label in spec["models"]}
    # every model plotted, every curve run; the dense models as wide as the LSH table counts
    # are not a curve: they decide LSH vs dense at equal activated units
    assert {m.label for m in exact.models} - {EQUAL_UNITS_DENSE_LABEL} == labels
    e = exact.panels["e"]
    assert e["x"] == "size" and e["models"][0] == UNIFORM_HASH_LABEL
    assert e["models"][1:] == [lsh_label(f, 1) for f in LSH_FAMILY_NAMES]


def test_figure_4_quick_has_each_family_at_one_and_sixteen_tables():
    for config in experiment_configs("fig4", "quick"):
        families = {(m.family, m.n_tables) for m in config.models if m.kind == "lsh"}
        assert families == {(f, s) for f in LSH_FAMILY_NAMES for s in (1, 16)}
        assert set(config.panels["b"]["models"]) == {"dense"} | {
            lsh_label(f, s) for f, s in families}


# -- the spec's family ---------------------------------------------------------------------

def test_model_spec_family_is_part_of_the_key_and_survives_config_json():
    sign = ModelSpec("lsh", n_bits=6)
    assert sign.family == "sign" and "family=sign" in sign.key()
    affine = ModelSpec("lsh", n_bits=6, family="affine")
    assert affine.key() != sign.key()
    euclidean = ModelSpec("lsh", n_bits=16, n_hashes=8, bucket_width=2.0, family="euclidean")
    assert "n_hashes=8" in euclidean.key() and "bucket_width=2.0" in euclidean.key()
    assert "family" not in ModelSpec("dense", width=8).key()
    config = ExperimentConfig(name="x", preset="tiny", target=TargetSpec(),
                              models=(sign, affine, euclidean))
    again = ExperimentConfig.from_dict(config.to_dict())
    assert [m.key() for m in again.models] == [m.key() for m in config.models]
    old = dict(kind="lsh", n_bits=6, n_tables=1)  # a config.json from before families
    assert ModelSpec(**old).key() == sign.key()


@pytest.mark.parametrize("kwargs,name", [
    (dict(kind="dense", width=8, family="sign"), "family"),
    (dict(kind="lsh", n_bits=6, family="cosine"), "family"),
    (dict(kind="lsh", n_bits=16, family="euclidean", bucket_width=1.0), "n_hashes"),
    (dict(kind="lsh", n_bits=16, family="euclidean", n_hashes=4), "bucket_width"),
    (dict(kind="lsh", n_bits=6, family="sign", bucket_width=1.0), "bucket_width"),
    (dict(kind="lsh", n_bits=6, family="uniform", n_tables=2), "n_tables"),
    (dict(kind="lsh", n_bits=25, family="affine"), "n_bits"),
])
def test_model_spec_rejects_bad_lsh_fields(kwargs, name):
    with pytest.raises(ValueError, match=name):
        ModelSpec(**kwargs)


# -- rows: non-empty buckets, regimes --------------------------------------------------------

def _config(models, fit="exact", **changes):
    settings = dict(name="t", preset="tiny", target=TargetSpec("polynomial", n_inputs=4,
                                                                 degree=2),
                    models=tuple(models), seeds=(0,), n_train=600, n_eval=300, fit=fit,
                    train_steps=30, train_batch=64, train_lr=1e-2)
    settings.update(changes)
    return ExperimentConfig(**settings)


def test_lsh_rows_count_the_non_empty_buckets_of_the_training_data():
    spec = ModelSpec("lsh", n_bits=5, n_tables=2, family="affine", label="L")
    config = _config([spec])
    data = _make_data(config, seed=3)
    row = run_model(spec, config, data, 3, torch.device("cpu"))
    keys = AffineHyperplaneLSH(4, 5, 2, seed=3).bucket_ids(data[0])  # the sweep's hasher
    expected = sum(len(np.unique(keys[:, t])) for t in range(2))
    assert row["nonempty_buckets"] == expected < row["buckets"] == 2 * 2**5
    assert row["activated_units"] == 2


def test_regimes_never_share_rows_and_a_new_adam_budget_is_refused(tmp_path):
    models = [ModelSpec("dense", width=16, label="dense"),
              ModelSpec("lsh", n_bits=4, n_tables=2, family="affine", label="L")]
    exact, sgd = _config(models, "exact"), _config(models, "adam")
    first = run_sweep([exact], tmp_path, device="cpu", progress=False)
    assert set(first["fit"]) == {"exact"}
    computed = []
    both = run_sweep([exact, sgd], tmp_path, device="cpu", progress=False,
                     on_row=computed.append)
    # the sgd rows are computed, not taken from the exact rows of the same models and seeds
    assert sorted(r["fit"] for r in computed) == ["adam", "adam"]
    assert len(both) == 4 and both.groupby("model_key")["fit"].nunique().eq(2).all()
    by = both.set_index(["model_key", "fit"])["eval_mse"]
    assert all(by[(k, "exact")] != by[(k, "adam")] for k in both["model_key"].unique())
    again = []
    run_sweep([exact, sgd], tmp_path, device="cpu", progress=False, on_row=again.append)
    assert again == []  # resumed: nothing refitted
    # another Adam budget is another setting (presets give both regimes one budget): the
    # folder's rows are refused, never reused
    longer = [config.with_(train_steps=31) for config in (exact, sgd)]
    assert settings_fingerprint(longer[1]) != settings_fingerprint(sgd)
    with pytest.raises(ValueError, match="other settings"):
        run_sweep(longer, tmp_path, device="cpu", progress=False)


# -- sizes, plots, fits -----------------------------------------------------------------------

def test_with_size_is_a_models_mean_non_empty_count_over_its_seeds():
    frame = pd.DataFrame({
        "target": "t", "model": ["lsh"] * 5 + ["dense", "lsh"],
        "model_key": ["k"] * 3 + ["k"] * 2 + ["d", "old"],
        "fit": ["exact"] * 3 + ["adam"] * 2 + ["exact", "exact"],
        "seed": [0, 1, 2, 0, 1, 0, 0],
        "buckets": [64.0] * 5 + [np.nan, 32.0], "width": [np.nan] * 5 + [16.0, np.nan],
        "nonempty_buckets": [30.0, 31.0, 35.0, 20.0, 21.0, np.nan, np.nan]})
    size = with_size(frame)["size"].tolist()
    assert size == [32.0, 32.0, 32.0, 20.0, 20.0, 16.0, 32.0]  # round(96/3), round(20.5)
    assert with_size(frame)["nonempty_buckets"].tolist()[:3] == [30.0, 31.0, 35.0]


def _two_regime_rows():
    """dense rows of one target in both regimes: nMSE = x^-1 exactly, 2·x^-0.5 by Adam."""
    rows = []
    for fit, law in (("exact", lambda x: x ** -1.0), ("adam", lambda x: 2 * x ** -0.5)):
        for x in (8, 16, 32, 64):
            for seed in (0, 1):
                rows.append({"target": "t", "model": "dense", "model_label": "dense",
                             "model_key": f"dense;width={x}", "fit": fit, "width": float(x),
                             "buckets": np.nan, "activated_units": x, "seed": seed,
                             "eval_nmse": law(x) * (1 + 0.01 * seed), "eval_mse": law(x)})
    return pd.DataFrame(rows)


def test_a_panel_of_one_regime_plots_only_that_regimes_rows():
    frame = _two_regime_rows()
    assert set(panel_rows({"fit": "adam"}, frame)["fit"]) == {"adam"}
    assert len(panel_rows({}, frame)) == len(frame)
    panels = [(fit, {"x": "activated_units", "models": ["dense"], "fit": fit, "title": fit},
               frame) for fit in REGIMES]
    fig = experiment_figure(panels, "regimes")
    lines = [ax.get_lines()[0] for ax in fig.axes if ax.get_xlabel()]
    for line, fit in zip(lines, REGIMES):
        rows = frame[frame["fit"] == fit]
        means = rows.groupby("activated_units")["eval_nmse"].apply(
            lambda v: np.exp(np.mean(np.log(v))))
        np.testing.assert_allclose(line.get_ydata(), means.to_numpy(), rtol=1e-12)


def test_fits_are_made_per_regime_on_that_regimes_rows(monkeypatch):
    import experiments.analysis.fits as fits_module

    frame = _two_regime_rows()
    config = ExperimentConfig(name="t", preset="tiny", target=TargetSpec(), models=(),
                              seeds=(0, 1))
    configs = []
    for fit in REGIMES:  # dense in two panels of one x, as beside each LSH family
        panels = {p: {"x": "activated_units", "models": ["dense"], "fit": fit} for p in "ab"}
        configs.append(config.with_(fit=fit, panels=panels))
    frame["target"] = config.target.label()
    calls = []
    fit_law = fits_module.fit_law
    monkeypatch.setattr(fits_module, "fit_law", lambda *a, **k: calls.append(k["law"])
                        or fit_law(*a, **k))
    fits = experiment_fits("t", configs, frame, n_boot=20)
    assert list(fits.columns) == FIT_COLUMNS and len(fits) == 2 * 2 * 2
    assert sorted(calls) == ["offset", "offset", "power", "power"]  # once per regime and law
    power = fits[fits["law"] == "power"].set_index(["fit", "panel"])["alpha"]
    np.testing.assert_allclose(power.loc[("exact", "a")], 1.0, atol=0.02)
    np.testing.assert_allclose(power.loc[("adam", "a")], 0.5, atol=0.02)
    assert power.loc[("adam", "b")] == power.loc[("adam", "a")]


@pytest.mark.parametrize("preset", ["tiny", "quick", "paper"])
@pytest.mark.parametrize("name", ["fig2", "fig3", "fig4"])
def test_every_lsh_table_count_has_a_dense_model_of_that_width(name, preset):
    """Baykal et al. 2022, §5.2 compare LSH and dense at the same number of activated units:
    an LSH model of s tables activates s units, so each config runs a dense model of width s,
    under its own label so that it joins neither the dense curve nor its fits."""
    from experiments.papers.presets import EQUAL_UNITS_DENSE_LABEL
    from experiments.papers.catalogue import experiment_configs

    for config in experiment_configs(name, preset):
        tables = {m.n_tables for m in config.models if m.kind == "lsh" and m.family != "uniform"}
        widths = {m.width for m in config.models
                  if m.label in ("dense", EQUAL_UNITS_DENSE_LABEL)}
        assert tables and tables <= widths, (config.fit, tables, widths)
        assert len({m.key() for m in config.models}) == len(config.models)  # one row each
        assert all(EQUAL_UNITS_DENSE_LABEL not in panel["models"]
                   for panel in config.panels.values())


def _equal_units_rows(dense_label):
    rows = []
    for seed in range(4):
        for size, error in ((300, 0.30), (900, 0.20)):
            rows.append(dict(model_label="LSH sign s=4", model="lsh", activated_units=4,
                             size=size, width=np.nan, seed=seed, eval_nmse=error * (1 + seed / 50)))
        rows.append(dict(model_label=dense_label, model="dense", activated_units=4, size=4,
                         width=4, seed=seed, eval_nmse=0.9 * (1 + seed / 40)))
    return pd.DataFrame(rows)


def test_lsh_against_dense_at_equal_units_is_decided_only_with_a_dense_of_width_s():
    from experiments.papers.presets import EQUAL_UNITS_DENSE_LABEL
    from experiments.papers.baykal_figures import _lsh_equal_units

    common = dict(regime="exact", sizes="")
    decided = _lsh_equal_units("fig2", _equal_units_rows(EQUAL_UNITS_DENSE_LABEL),
                               "LSH sign s=4", 0, common)
    assert decided.verdict not in ("not tested",) and decided.effect < 0
    missing = _equal_units_rows("some other model")
    undecided = _lsh_equal_units("fig2", missing, "LSH sign s=4", 0, common)
    assert undecided.verdict == "not tested" and "needs a dense model of width s = 4" in \
        undecided.evidence
