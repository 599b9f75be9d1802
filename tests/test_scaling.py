"""Scaling-law fits and the claim logic of the report."""

import numpy as np
import pandas as pd
import pytest

from experiments.report import claims_for
from experiments.scaling import fit_log_log, fit_power_law, scaling_table


def test_exact_power_law_is_recovered():
    n = np.array([16, 32, 64, 128, 256])
    alpha, log_c = fit_log_log(n, 3.0 * n**-0.75)
    assert alpha == pytest.approx(0.75)
    assert log_c == pytest.approx(np.log(3.0))


def test_bootstrap_interval_covers_the_true_exponent():
    rng = np.random.default_rng(0)
    n = np.array([16, 32, 64, 128, 256, 512])
    rows = [{"activated_units": x, "eval_mse": 2.0 * x**-1.0 * np.exp(rng.normal(0, 0.1)),
             "seed": s, "model_label": "DSM"} for s in range(6) for x in n]
    law = fit_power_law(pd.DataFrame(rows), "activated_units", n_boot=300)
    assert law.alpha_low <= 1.0 <= law.alpha_high
    assert law.alpha_high - law.alpha_low < 0.3
    table = scaling_table(pd.DataFrame(rows), "activated_units", n_boot=100)
    assert list(table["model_label"]) == ["DSM"]


def test_single_seed_has_no_interval_and_bad_input_raises():
    frame = pd.DataFrame({"x": [1, 2, 4], "eval_mse": [1.0, 0.5, 0.25], "seed": 0})
    law = fit_power_law(frame, "x")
    assert law.alpha == pytest.approx(1.0) and np.isnan(law.alpha_low)
    with pytest.raises(ValueError, match="two distinct"):
        fit_log_log([4, 4], [1.0, 2.0])


def _frame(rows):
    base = {"target": "t", "width": np.nan, "buckets": np.nan, "flops_paper": np.nan}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_claims_follow_the_numbers():
    rows = []
    for units, dense, dsm in [(16, 1.0, 0.5), (32, 0.8, 0.4)]:
        rows.append({"model": "dense", "model_label": "dense", "activated_units": units,
                     "width": units, "eval_mse": dense, "seed": 0})
        rows.append({"model": "dsm", "model_label": "DSM width 512", "activated_units": units,
                     "width": 512, "eval_mse": dsm, "seed": 0})
    claims = claims_for("fig2", _frame(rows), [])
    assert claims[0].verdict == "supported" and "2/2" in claims[0].evidence
    flipped = _frame([{**r, "eval_mse": 1 / r["eval_mse"]} for r in rows])
    assert claims_for("fig2", flipped, [])[0].verdict == "not supported"
