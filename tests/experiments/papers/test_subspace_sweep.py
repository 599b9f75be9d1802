"""The subspace experiment's window, reach and verdict (experiments/papers/subspace_sweep.py): the input-only
geometry against the LSH table fitted to the inputs themselves, and every threshold of the
pre-registered rules moved across its edge."""

import math

import numpy as np
import pandas as pd
import pytest

from experiments.analysis.fit_window import (
    EMPTY_FRACTION_MAX,
    EMPTY_SHARE_MAX,
    SPREAD_RATIO_MAX,
    WINDOW_RULE,
    in_sample_regime,
    sample_regime_max_buckets,
    window_mask,
)
from experiments.papers.catalogue import experiment_configs
from experiments.papers.subspace_sweep import subspace_widths
from experiments.papers.subspace_sweep import (
    MIN_DECADES,
    MIN_WIDTHS,
    bucket_geometry,
    exponent_verdict,
    needed_n_train,
    reach,
    subspace_claim,
    tolerance,
    with_geometry,
)


def test_geometry_equals_the_lsh_table_fitted_to_the_inputs_themselves():
    # an independent route: routing.LSHTable fitted to each coordinate z_j of Γ, the same
    # data and hashes as the sweep; its errors give the spread ratio and the empty share
    from experiments.runner.specs import data_seeds
    from lipschitz import make_dataset
    from routing.euclidean_lsh import EuclideanLSH
    from routing.lsh_table import LSHTable

    config = experiment_configs("subspace", "tiny")[0]
    spec = config.models[-1]  # the narrowest width: some empty buckets
    geometry = bucket_geometry(config, seeds=[1])
    row = geometry[geometry["model_key"] == spec.key()].iloc[0]
    target, distribution = config.target.build()
    train_seed, eval_seed = data_seeds(1)
    X, _ = make_dataset(target, distribution, config.n_train, 0.0, train_seed)
    X_eval, _ = make_dataset(target, distribution, config.n_eval, 0.0, eval_seed)
    Z, Z_eval = X @ distribution.basis, X_eval @ distribution.basis
    error = np.zeros(len(Z_eval))
    for j in range(Z.shape[1]):
        table = LSHTable(EuclideanLSH(X.shape[1], spec.n_hashes, spec.bucket_width, seed=1))
        prediction, empty = table.fit(X, Z[:, j]).predict(X_eval, return_empty=True)
        error += (Z_eval[:, j] - prediction) ** 2
    empty = empty[:, 0]
    total = np.mean(np.sum((Z_eval - Z.mean(axis=0)) ** 2, axis=1))
    assert empty.any() and not empty.all()
    assert row["spread_ratio"] == pytest.approx(error[~empty].mean() / total, rel=1e-9)
    assert row["empty_share"] == pytest.approx(error[empty].sum() / error.sum(), rel=1e-9)
    assert row["empty_fraction"] == pytest.approx(empty.mean())


def test_geometry_counts_the_rows_buckets_and_refuses_other_rows(tmp_path):
    from experiments.runner.sweep import run_sweep

    configs = experiment_configs("subspace", "tiny")[:1]
    frame = run_sweep(configs, tmp_path, device="cpu", progress=False)
    joined = with_geometry(frame, configs)
    assert joined["spread_ratio"].notna().all() and len(joined) == len(frame)
    # wider buckets are larger: the spread ratio falls with the width, within each seed
    for _, rows in joined.groupby("seed"):
        assert rows.sort_values("buckets")["spread_ratio"].is_monotonic_decreasing
    broken = frame.assign(buckets=frame["buckets"] + 1)
    with pytest.raises(ValueError, match="other data or hashes"):
        with_geometry(broken, configs)
    with pytest.raises(ValueError, match="subspace target"):
        bucket_geometry(experiment_configs("fig2", "tiny")[0])


def _rows(**values):
    base = {"buckets": 100.0, "spread_ratio": 0.1, "empty_fraction": 0.0, "empty_share": 0.0,
            "model_key": "m", "seed": 0}
    return pd.DataFrame([{**base, **values}])


@pytest.mark.parametrize("column, bound", [("spread_ratio", SPREAD_RATIO_MAX),
                                           ("empty_fraction", EMPTY_FRACTION_MAX),
                                           ("empty_share", EMPTY_SHARE_MAX)])
def test_each_window_bound_flips_a_row_at_its_threshold(column, bound):
    inside = window_mask(_rows(**{column: bound * 0.999}), WINDOW_RULE, k=2, n_train=10**6)
    outside = window_mask(_rows(**{column: bound * 1.001}), WINDOW_RULE, k=2, n_train=10**6)
    assert inside.tolist() == [True] and outside.tolist() == [False]
    assert window_mask(_rows(**{column: np.nan}), WINDOW_RULE, 2, 10**6).tolist() == [False]


def test_the_sample_condition_ends_the_window_where_k_t_ln_t_reaches_n_train():
    top = sample_regime_max_buckets(3, 100_000)
    assert 3 * top * math.log(top) == pytest.approx(100_000)
    assert window_mask(_rows(buckets=top * 0.99), WINDOW_RULE, 3, 100_000).tolist() == [True]
    assert window_mask(_rows(buckets=top * 1.01), WINDOW_RULE, 3, 100_000).tolist() == [False]
    assert in_sample_regime([top * 0.99, top * 1.01], 3, 100_000).tolist() == [True, False]
    with pytest.raises(ValueError, match="GEOMETRY|geometry|spread_ratio"):
        window_mask(_rows().drop(columns=["spread_ratio"]), WINDOW_RULE, 2, 100)


def _window(n_widths, decades):
    t = np.geomspace(100, 100 * 10**decades, n_widths)
    return pd.DataFrame({"buckets": t, "model_key": [f"w{i}" for i in range(n_widths)]})


def test_reach_needs_four_widths_and_a_decade():
    assert reach(_window(MIN_WIDTHS, MIN_DECADES))["in_reach"]
    assert not reach(_window(MIN_WIDTHS - 1, 2.0))["in_reach"]
    assert not reach(_window(10, MIN_DECADES * 0.98))["in_reach"]
    empty = reach(_window(0, 1.0))
    assert not empty["in_reach"] and empty["n_widths"] == 0 and empty["decades"] == 0


@pytest.mark.parametrize("k", [2, 3, 4])
def test_the_exponent_verdict_flips_at_each_edge_of_the_band(k):
    theory, delta = 2 / k, tolerance(k)
    assert delta == pytest.approx((2 / k - 2 / (k + 1)) / 2)  # half the gap to k + 1
    eps = 1e-3
    assert exponent_verdict(theory - delta + eps, theory + delta - eps, k)[0] == "supported"
    assert exponent_verdict(theory - delta - eps, theory, k)[0] == "inconclusive"
    assert exponent_verdict(theory, theory + delta + eps, k)[0] == "inconclusive"
    verdict, margin = exponent_verdict(theory + delta + eps, theory + 1, k)
    assert verdict == "not supported" and margin == pytest.approx(eps)
    assert exponent_verdict(0.0, theory - delta - eps, k)[0] == "not supported"
    assert exponent_verdict(np.nan, np.nan, k)[0] == "inconclusive"
    # the exponent of the next dimension, measured exactly, is told apart
    assert exponent_verdict(2 / (k + 1), 2 / (k + 1), k)[0] == "not supported"


def test_out_of_reach_says_what_would_be_needed_and_in_reach_gives_the_verdict():
    rows = pd.DataFrame({"buckets": [10.0, 40.0, 160.0, 640.0, 2560.0],
                         "spread_ratio": [0.6, 0.3, 0.2, 0.1, 0.05],
                         "empty_fraction": 0.0, "empty_share": 0.0,
                         "model_key": list("abcde"), "seed": 0})
    rows["eval_nmse"] = 1.0 / rows["buckets"]
    window = rows[window_mask(rows, WINDOW_RULE, 2, 10_000)]  # T = 160, 640 only
    result = subspace_claim(2, 10_000, rows, window, fit=None)
    assert result["verdict"] == "out of reach"
    assert f"{needed_n_train(2, 160):,.0f}" in result["evidence"]
    assert needed_n_train(2, 160) == pytest.approx(2 * 1600 * math.log(1600))
    wide = rows.assign(spread_ratio=[0.2, 0.15, 0.1, 0.05, 0.02])
    window = wide[window_mask(wide, WINDOW_RULE, 2, 10**6)]
    fit = {"alpha": 1.02, "alpha_low": 0.95, "alpha_high": 1.08, "E": 1e-4, "n_points": 5,
           "rms_log_residual": 0.01, "extrapolation_error": 0.02}
    result = subspace_claim(2, 10**6, wide, window, fit=fit)
    assert result["verdict"] == "supported" and result["effect"] == pytest.approx(0.02)
    result = subspace_claim(2, 10**6, wide, window, fit={**fit, "alpha_low": 0.5,
                                                         "alpha_high": 0.8, "alpha": 0.6})
    assert result["verdict"] == "not supported" and "misses the band" in result["diagnosis"]


def test_quick_grid_steps_a_fraction_of_a_decade_of_t_and_the_window_is_in_config():
    from experiments.runner.specs import fit_of

    configs = experiment_configs("subspace", "quick")
    assert [c.target.subspace_k for c in configs] == [2, 3, 4, 5, 6]
    for config in configs:
        k = config.target.subspace_k
        widths = subspace_widths(k, "quick")
        ratios = np.array(widths[:-1]) / np.array(widths[1:])
        # one quarter of a decade of T per step where T ∝ w^(−k)
        assert np.allclose(np.log10(ratios) * k, 0.25, atol=2e-3)
        low, high = config.fit_window["buckets"]
        assert low == 2**k and high == pytest.approx(
            sample_regime_max_buckets(k, config.n_train), abs=0.1)
        assert config.panels["a"]["window_rule"] == WINDOW_RULE
        assert {fit_of(m, config) for m in config.models} == {"exact"}  # bucket means


def _synthetic_subspace(alpha, k=2, seeds=(0, 1, 2), spread=0.03):
    """A subspace config and rows with nMSE = c_s · T^(−alpha), c_s = 1 + spread · seed (each
    seed its own T too), spread ratio 3/T (buckets smaller than half of Γ from T = 12) and
    empty buckets carrying more than 10 % of the identity map's error above T = 3000."""
    from experiments.runner.specs import ExperimentConfig, ModelSpec, TargetSpec

    widths = np.geomspace(8.0, 0.1, 12)
    models = tuple(ModelSpec("lsh_table", n_hashes=2 * k, bucket_width=float(w),
                             label="LSH table") for w in widths)
    config = ExperimentConfig(
        name="subspace", preset="quick", target=TargetSpec("mlp", n_inputs=64, subspace_k=k),
        models=models, seeds=seeds, n_train=10**7,
        panels={"a": {"x": "buckets", "models": ["LSH table"], "sample_regime_k": k,
                      "window_rule": dict(WINDOW_RULE), "theory_alpha": 2 / k}},
        fit_window={"buckets": (2.0**k, sample_regime_max_buckets(k, 10**7))})
    rng = np.random.default_rng(0)
    rows = []
    for seed in seeds:
        for i, spec in enumerate(models):
            t = round(2.0 * 10 ** (i * 0.35) * (1 + 0.05 * seed))
            rows.append({"experiment": "subspace", "target": config.target.label(),
                         "model": "lsh_table", "model_label": "LSH table",
                         "model_key": spec.key(), "buckets": float(t), "width": np.nan,
                         "seed": seed, "fit": "exact",
                         "eval_nmse": (1 + spread * seed) * t ** -alpha * np.exp(
                             rng.normal(0, 0.02)),
                         "spread_ratio": 3.0 / t, "empty_fraction": 0.0,
                         "empty_share": 0.5 if t > 3000 else 0.01})
    return config, pd.DataFrame(rows).assign(eval_mse=lambda f: f["eval_nmse"])


@pytest.mark.parametrize("alpha, verdict", [(1.0, "supported"), (0.6, "not supported")])
def test_fits_and_the_verdict_use_the_window_rows_only(alpha, verdict):
    from experiments.papers.scaling_claims import claims_for
    from experiments.analysis.fits import experiment_fits

    config, frame = _synthetic_subspace(alpha)
    fits = experiment_fits("subspace", [config], frame, n_boot=100)
    offset = fits[fits["law"] == "offset"].iloc[0]
    inside = frame[(frame["spread_ratio"] <= SPREAD_RATIO_MAX) & (frame["buckets"] <= 3000)]
    assert offset["x_min"] == inside["buckets"].min() and offset["x_max"] == \
        inside["buckets"].max()
    assert "spread_ratio <= 0.25" in offset["window"] and "empty_share <= 0.1" in \
        offset["window"]
    claim = claims_for("subspace", frame, [config], fits=fits)[0]
    assert claim.verdict == verdict
    assert claim.effect == pytest.approx(offset["alpha"] - 1.0)
    if verdict != "supported":
        # each seed's own slope is the planted one, whatever its constant
        slopes = claim.diagnosis.split("each seed's own log-log slope: ")[1].split(" (")[0]
        assert [float(v) for v in slopes.split(", ")] == pytest.approx([alpha] * 3, abs=0.03)
    with pytest.raises(ValueError, match="with_geometry"):
        experiment_fits("subspace", [config], frame.drop(columns=["spread_ratio"]), n_boot=0)


# -- parameters named ------------------------------------------------------------------------
def test_needed_n_train_names_a_bad_k():
    with pytest.raises((ValueError, TypeError), match="k must be an integer"):
        needed_n_train([2], 10.0)


def test_window_mask_names_a_bad_k():
    rows = pd.DataFrame({"buckets": [4.0], "spread_ratio": [0.1], "empty_fraction": [0.0],
                         "empty_share": [0.0]})
    with pytest.raises((ValueError, TypeError), match="k must be an integer"):
        window_mask(rows, WINDOW_RULE, None, 100)


def test_subspace_widths_names_a_bad_preset():
    with pytest.raises((ValueError, TypeError), match="preset must be one of"):
        subspace_widths(3, "nope")
