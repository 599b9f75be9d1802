"""The statistics module: reference values computed here with scipy/statsmodels, properties
(nesting by confidence, Holm ≥ raw, monotonicity), coverage by simulation with fixed seeds,
and the errors raised for bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.regression.linear_model import OLS
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import proportion_confint
from statsmodels.tools import add_constant

import routing
from inference import (adjust_p_values, bonferroni, bootstrap_interval, clopper_pearson,
                       fit_exponent, holm, percentile_interval, power_lower_bound, t_interval)

PROPERTY = settings(max_examples=60, deadline=None, derandomize=True, database=None)
#: Allowed shortfall of a simulated coverage below the nominal one: 3 standard errors of a
#: coverage estimate near 0.95 from 2000 simulations (√(0.95·0.05/2000) ≈ 0.0049).
COVERAGE_TOL = 0.015
N_SIM = 2000


def test_inference_imports_no_sparselab_package():
    """The module sits at the bottom: importing it loads no other sparselab package."""
    code = ("import sys, inference; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'routing', 'lipschitz', 'experiments', 'proofs_checks', 'torch'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ Clopper–Pearson
@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (517, 2000), (1, 1), (0, 1)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.999])
def test_clopper_pearson_two_sided_matches_statsmodels_beta(k, n, confidence):
    ref = proportion_confint(k, n, alpha=1 - confidence, method="beta")
    assert clopper_pearson(k, n, confidence) == pytest.approx(ref, abs=1e-12)


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
@pytest.mark.parametrize("k,n", [(0, 14), (13, 14), (14, 14), (5, 37)])
def test_clopper_pearson_sides_match_scipy_binomtest(alternative, k, n):
    ref = stats.binomtest(k, n, alternative=alternative).proportion_ci(0.95, method="exact")
    assert clopper_pearson(k, n, 0.95, alternative) == pytest.approx((ref.low, ref.high),
                                                                      abs=1e-12)


def test_clopper_pearson_vectorised_and_broadcast():
    k = np.array([[0, 3], [7, 10]])
    low, high = clopper_pearson(k, 10, 0.9)
    assert low.shape == high.shape == (2, 2) and low.dtype == np.float64
    for (i, j), kk in np.ndenumerate(k):
        assert (low[i, j], high[i, j]) == pytest.approx(clopper_pearson(int(kk), 10, 0.9))
    low, high = clopper_pearson([1, 2, 3], [5, 6, 7])  # trials broadcast too
    assert high[2] == pytest.approx(clopper_pearson(3, 7)[1])
    assert isinstance(clopper_pearson(np.int64(2), 4)[0], float)
    assert clopper_pearson(np.array([2.0]), 4)[0][0] == pytest.approx(clopper_pearson(2, 4)[0])


@PROPERTY
@given(n=st.integers(1, 300), frac=st.floats(0, 1), c1=st.floats(0.5, 0.99),
       c2=st.floats(0.5, 0.99))
def test_clopper_pearson_nested_by_confidence_and_one_sided_tighter(n, frac, c1, c2):
    k = int(round(frac * n))
    lo_c, hi_c = sorted((c1, c2))
    a_low, a_high = clopper_pearson(k, n, lo_c)
    b_low, b_high = clopper_pearson(k, n, hi_c)
    assert b_low <= a_low + 1e-12 and a_high <= b_high + 1e-12
    assert 0.0 <= b_low <= k / n <= b_high <= 1.0
    # a one-sided bound at the same confidence is tighter than the two-sided end
    assert clopper_pearson(k, n, lo_c, "greater")[0] >= a_low - 1e-12
    assert clopper_pearson(k, n, lo_c, "less")[1] <= a_high + 1e-12


@PROPERTY
@given(n=st.integers(1, 200), confidence=st.floats(0.5, 0.999))
def test_clopper_pearson_monotone_in_successes(n, confidence):
    low, high = clopper_pearson(np.arange(n + 1), n, confidence)
    assert np.all(np.diff(low) > 0) and np.all(np.diff(high) > 0)


def _cp_coverage(p, n, confidence, rng):
    k = rng.binomial(n, p, size=N_SIM)
    low, high = clopper_pearson(k, n, confidence)
    return np.mean((low <= p) & (p <= high))


@pytest.mark.parametrize("p", [0.02, 0.1, 0.3, 0.5, 0.9])
def test_clopper_pearson_coverage_by_simulation(p):
    rng = np.random.default_rng(12345)
    n = 25
    assert _cp_coverage(p, n, 0.95, rng) >= 0.95 - COVERAGE_TOL
    # the same simulation flags an interval that is too short: the Wald interval
    k = rng.binomial(n, p, size=N_SIM)
    low, high = proportion_confint(k, n, alpha=0.05, method="normal")
    if p in (0.02, 0.9):
        assert np.mean((low <= p) & (p <= high)) < 0.95 - COVERAGE_TOL


def test_one_sided_clopper_pearson_coverage_by_simulation():
    rng = np.random.default_rng(7)
    for p in (0.05, 0.5, 0.85):
        k = rng.binomial(30, p, size=N_SIM)
        assert np.mean(power_lower_bound(k, 30) <= p) >= 0.95 - COVERAGE_TOL


def test_power_lower_bound_threshold_at_0_8():
    # closed form for k = n: α^(1/n)
    assert power_lower_bound(14, 14) == pytest.approx(0.05 ** (1 / 14), rel=1e-12)
    assert power_lower_bound(14, 14) >= 0.8 > power_lower_bound(13, 14)
    assert power_lower_bound(13, 14) == pytest.approx(
        stats.binomtest(13, 14, alternative="greater").proportion_ci(0.95).low, abs=1e-12)
    assert power_lower_bound(0, 5) == 0.0
    np.testing.assert_allclose(power_lower_bound(np.array([13, 14]), 14),
                               [power_lower_bound(13, 14), power_lower_bound(14, 14)])


@pytest.mark.parametrize("call,match", [
    (lambda: clopper_pearson(11, 10), "successes must be integers >= 0, successes <= 10"),
    (lambda: clopper_pearson(-1, 10), "successes"),
    (lambda: clopper_pearson(1.5, 10), "successes must be integer counts"),
    (lambda: clopper_pearson(True, 10), "successes must be integer counts"),
    (lambda: clopper_pearson(np.nan, 10), "successes must be integer counts"),
    (lambda: clopper_pearson(1, 0), "trials must be integers >= 1"),
    (lambda: clopper_pearson([1, 6], [5, 5]), "successes .*trials"),
    (lambda: clopper_pearson(1, 10, confidence=1.0), r"confidence must be a real number in \(0, 1\)"),
    (lambda: clopper_pearson(1, 10, confidence=0), "confidence"),
    (lambda: clopper_pearson(1, 10, confidence="0.9"), "confidence"),
    (lambda: clopper_pearson(1, 10, alternative="both"), "alternative must be one of"),
    (lambda: power_lower_bound(15, 14), "refuted must be integers >= 0, refuted <= 14"),
    (lambda: power_lower_bound(1, 0), "n must be integers >= 1"),
])
def test_clopper_pearson_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_routing_clopper_pearson_is_this_one():
    ks = np.arange(0, 21)
    np.testing.assert_array_equal(routing.clopper_pearson(ks, 20, 0.99),
                                  clopper_pearson(ks, 20, 0.99))
    assert routing.clopper_pearson(4, 20) == clopper_pearson(4, 20)


# ------------------------------------------------------------------ t interval
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("confidence", [0.8, 0.95])
def test_t_interval_matches_scipy_t(alternative, confidence):
    x = np.random.default_rng(3).normal(1.0, 2.0, size=7)
    res = t_interval(x, confidence, alternative)
    sem = stats.sem(x)
    if alternative == "two-sided":
        ref = stats.t.interval(confidence, len(x) - 1, loc=x.mean(), scale=sem)
    elif alternative == "greater":
        ref = (x.mean() - stats.t.ppf(confidence, len(x) - 1) * sem, np.inf)
    else:
        ref = (-np.inf, x.mean() + stats.t.ppf(confidence, len(x) - 1) * sem)
    assert (res.low, res.high) == pytest.approx(ref, rel=1e-12)
    assert res.mean == pytest.approx(x.mean()) and res.sd == pytest.approx(x.std(ddof=1))
    mean, sd, low, high = res  # unpacks as four numbers
    assert low == res.low


def test_t_interval_two_values_and_zero_spread():
    res = t_interval([1.0, 3.0], 0.95)
    half = stats.t.ppf(0.975, 1) * np.sqrt(2.0) / np.sqrt(2)
    assert (res.low, res.high) == pytest.approx((2 - half, 2 + half))
    flat = t_interval([0.5, 0.5, 0.5])
    assert flat == (0.5, 0.0, 0.5, 0.5)
    assert t_interval([0.5, 0.5], alternative="greater")[2:] == (0.5, np.inf)


@PROPERTY
@given(values=st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=12),
       c1=st.floats(0.5, 0.99), c2=st.floats(0.5, 0.99))
def test_t_interval_nested_by_confidence(values, c1, c2):
    lo_c, hi_c = sorted((c1, c2))
    a, b = t_interval(values, lo_c), t_interval(values, hi_c)
    tol = 1e-9 * (1 + abs(a.mean))
    assert b.low <= a.low + tol and a.high <= b.high + tol
    assert a.low <= a.mean + tol and a.mean <= a.high + tol


def test_t_interval_coverage_by_simulation():
    rng = np.random.default_rng(2024)
    n, mu = 5, 0.3
    samples = rng.normal(mu, 1.5, size=(N_SIM, n))
    hits = [(r.low <= mu <= r.high) for r in (t_interval(s, 0.95) for s in samples)]
    assert np.mean(hits) >= 0.95 - COVERAGE_TOL
    one_sided = [t_interval(s, 0.95, "greater").low <= mu for s in samples]
    assert np.mean(one_sided) >= 0.95 - COVERAGE_TOL
    # the simulation is sharp enough to catch the normal quantile used with n = 5 (≈ 0.88)
    z = stats.norm.ppf(0.975) * samples.std(axis=1, ddof=1) / np.sqrt(n)
    assert np.mean(np.abs(samples.mean(axis=1) - mu) <= z) < 0.95 - COVERAGE_TOL


@pytest.mark.parametrize("call,match", [
    (lambda: t_interval([1.0]), "values must have at least 2 entries"),
    (lambda: t_interval([]), "values must have at least 2 entries"),
    (lambda: t_interval([1.0, np.nan]), "values must be finite"),
    (lambda: t_interval([1.0, np.inf, 2.0]), "values must be finite"),
    (lambda: t_interval([[1.0, 2.0], [3.0, 4.0]]), "values must be a 1-D array"),
    (lambda: t_interval(["a", "b"]), "values must be real numbers"),
    (lambda: t_interval([1.0, 2.0], 1.5), "confidence"),
    (lambda: t_interval([1.0, 2.0], alternative="up"), "alternative"),
])
def test_t_interval_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------ multiplicity
@pytest.mark.parametrize("method", ["holm", "bonferroni"])
def test_adjusted_p_values_match_statsmodels(method):
    p = np.array([0.001, 0.2, 0.013, 0.04, 0.03, 0.9])
    rej_ref, adj_ref, _, _ = multipletests(p, alpha=0.05, method=method)
    res = adjust_p_values(p, method, 0.05)
    np.testing.assert_allclose(res.p_adjusted, adj_ref, rtol=1e-12)
    np.testing.assert_array_equal(res.reject, rej_ref)
    func = holm if method == "holm" else bonferroni
    np.testing.assert_array_equal(func(p).p_adjusted, res.p_adjusted)


def test_holm_by_hand_and_its_threshold():
    # sorted 0.01, 0.03, 0.04 with m = 3: 3·0.01, max(0.03, 2·0.03), max(0.06, 0.04)
    reject, adj = holm([0.04, 0.01, 0.03])
    np.testing.assert_allclose(adj, [0.06, 0.03, 0.06])
    np.testing.assert_array_equal(reject, [False, True, False])
    # the smallest p moves across α/m = 0.05/3
    assert holm([0.0166, 0.5, 0.5]).reject[0] and not holm([0.0167, 0.5, 0.5]).reject[0]


def test_nan_p_values_are_untested_and_excluded_from_the_family():
    p = np.array([0.01, np.nan, 0.04, np.nan, 0.03])
    res = holm(p)
    ref_rej, ref_adj, _, _ = multipletests(p[~np.isnan(p)], method="holm")
    np.testing.assert_allclose(res.p_adjusted[~np.isnan(p)], ref_adj)
    assert np.isnan(res.p_adjusted[[1, 3]]).all() and not res.reject[[1, 3]].any()
    np.testing.assert_array_equal(res.reject[~np.isnan(p)], ref_rej)
    empty = holm(np.array([np.nan, np.nan]))
    assert np.isnan(empty.p_adjusted).all() and not empty.reject.any()
    assert holm([]).p_adjusted.shape == (0,)
    assert holm(0.01).p_adjusted.shape == ()


@pytest.mark.slow
def test_families_along_the_last_axis_match_one_at_a_time():
    rng = np.random.default_rng(5)
    p = rng.uniform(size=(40, 6)) ** 2
    p[rng.uniform(size=p.shape) < 0.2] = np.nan
    for method in ("holm", "bonferroni"):
        batch = adjust_p_values(p, method)
        assert batch.p_adjusted.shape == batch.reject.shape == (40, 6)
        for row, adj, rej in zip(p, batch.p_adjusted, batch.reject):
            ok = ~np.isnan(row)
            if ok.any():
                ref_rej, ref_adj, _, _ = multipletests(row[ok], method=method)
                np.testing.assert_allclose(adj[ok], ref_adj, rtol=1e-14)
                np.testing.assert_array_equal(rej[ok], ref_rej)
            assert np.isnan(adj[~ok]).all() and not rej[~ok].any()


@PROPERTY
@given(p=st.lists(st.one_of(st.floats(0, 1), st.just(float("nan"))), min_size=1, max_size=15),
       alpha=st.floats(0.001, 0.5))
def test_holm_at_least_raw_at_most_bonferroni_and_monotone(p, alpha):
    p = np.array(p)
    h, b = holm(p, alpha), bonferroni(p, alpha)
    ok = ~np.isnan(p)
    assert np.all(h.p_adjusted[ok] >= p[ok]) and np.all(h.p_adjusted[ok] <= 1.0)
    assert np.all(h.p_adjusted[ok] <= b.p_adjusted[ok] + 1e-15)
    assert np.all(h.reject >= b.reject)  # Holm rejects whatever Bonferroni rejects
    order = np.argsort(p[ok], kind="stable")
    assert np.all(np.diff(h.p_adjusted[ok][order]) >= 0)
    np.testing.assert_array_equal(h.reject, ok & (np.nan_to_num(h.p_adjusted, nan=2) <= alpha))


def test_holm_controls_family_wise_error_by_simulation():
    rng = np.random.default_rng(11)
    p = rng.uniform(size=(N_SIM, 8))  # N_SIM families of eight true nulls, independent
    fwer = np.mean(holm(p).reject.any(axis=1))
    raw = np.mean((p <= 0.05).any(axis=1))
    assert fwer <= 0.05 + COVERAGE_TOL
    assert raw > 0.3  # unadjusted, the family errs far more often (1 − 0.95^8 ≈ 0.34)


@pytest.mark.parametrize("call,match", [
    (lambda: holm([0.5, 1.2]), r"p_values must be in \[0, 1\] or NaN"),
    (lambda: holm([-0.1]), "p_values"),
    (lambda: holm([np.inf]), "p_values"),
    (lambda: holm(["a"]), "p_values must be real numbers"),
    (lambda: holm([0.1], alpha=0.0), "alpha must be a real number in"),
    (lambda: adjust_p_values([0.1], method="fdr_bh"), "method must be one of"),
])
def test_multiplicity_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------ bootstrap
def test_percentile_interval_matches_numpy_quantiles():
    r = np.random.default_rng(0).normal(size=501)
    assert percentile_interval(r, 0.9) == pytest.approx(tuple(np.quantile(r, [0.05, 0.95])))
    assert percentile_interval(r, 0.9, "greater") == (pytest.approx(np.quantile(r, 0.1)), np.inf)
    assert percentile_interval(r, 0.9, "less") == (-np.inf, pytest.approx(np.quantile(r, 0.9)))


def test_bootstrap_interval_equals_percentiles_of_its_resamples():
    x = np.random.default_rng(1).exponential(size=40)
    res = bootstrap_interval(x, np.mean, n_resamples=2000, confidence=0.9, seed=5)
    ref = stats.bootstrap((x,), np.mean, n_resamples=2000, confidence_level=0.9,
                          method="percentile", rng=np.random.default_rng(5))
    assert percentile_interval(ref.bootstrap_distribution, 0.9) == pytest.approx(
        (res.low, res.high), rel=1e-12)
    assert res.estimate == pytest.approx(x.mean()) and res.alternative == "two-sided"
    assert res.low < res.estimate < res.high and res.n_resamples == 2000
    assert bootstrap_interval(x, np.mean, n_resamples=2000, confidence=0.9, seed=5) == res
    assert bootstrap_interval(x, np.mean, n_resamples=2000, confidence=0.9, seed=6) != res
    greater = bootstrap_interval(x, np.mean, n_resamples=2000, confidence=0.9,
                                 alternative="greater", seed=5)
    assert greater.high == np.inf and greater.low >= res.low and greater.alternative == "greater"


def test_bootstrap_two_samples():
    rng = np.random.default_rng(2)
    a, b = rng.normal(1.0, size=30), rng.normal(0.0, size=25)
    res = bootstrap_interval((a, b), lambda u, v, axis=-1: u.mean(axis) - v.mean(axis),
                             n_resamples=999, seed=0)
    assert res.estimate == pytest.approx(a.mean() - b.mean())
    assert res.low < res.estimate < res.high


def test_bootstrap_coverage_by_simulation():
    rng = np.random.default_rng(99)
    hits = [bootstrap_interval(rng.normal(2.0, 1.0, size=40), np.mean, n_resamples=400,
                               seed=rng).low <= 2.0
            for _ in range(1000)]
    # one-sided percentile interval of a mean at n = 40: first-order accurate, nominal 0.95
    hits2 = np.mean(hits)
    assert hits2 >= 0.95 - 0.03


@pytest.mark.parametrize("call,match", [
    (lambda: percentile_interval([]), "replicates must have at least 1"),
    (lambda: percentile_interval([1.0, np.nan]), "replicates must be finite"),
    (lambda: bootstrap_interval([1.0], np.mean), "data must have at least 2"),
    (lambda: bootstrap_interval([1.0, np.nan], np.mean), "data must be finite"),
    (lambda: bootstrap_interval([1.0, 2.0], "mean"), "statistic must be callable"),
    (lambda: bootstrap_interval([1.0, 2.0], np.mean, n_resamples=0), "n_resamples"),
    (lambda: bootstrap_interval([1.0, 2.0], np.mean, seed=-1), "seed"),
    (lambda: bootstrap_interval([1.0, 2.0], np.mean, alternative="x"), "alternative"),
])
def test_bootstrap_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ------------------------------------------------------------------ exponent fits
def test_exponent_fit_matches_polyfit_and_statsmodels_ols():
    rng = np.random.default_rng(4)
    x = np.repeat([16.0, 64.0, 256.0, 1024.0], 3)
    y = 5.0 * x ** -0.7 * np.exp(rng.normal(0, 0.05, size=x.size))
    fit = fit_exponent(x, y, confidence=0.9)
    slope, intercept = np.polyfit(np.log(x), np.log(y), 1)
    assert (fit.slope, fit.intercept) == pytest.approx((slope, intercept), rel=1e-10)
    ols = OLS(np.log(y), add_constant(np.log(x))).fit()
    assert fit.stderr == pytest.approx(ols.bse[1], rel=1e-10)
    assert fit.intercept_stderr == pytest.approx(ols.bse[0], rel=1e-10)
    assert (fit.low, fit.high) == pytest.approx(tuple(ols.conf_int(alpha=0.1)[1]), rel=1e-10)
    assert fit.n == 12 and fit.confidence == 0.9


def test_exponent_fit_exact_law_and_offset():
    x = np.array([1.0, 2.0, 4.0, 8.0, 16.0])
    fit = fit_exponent(x, 3.0 * x ** -0.5)
    assert fit.slope == pytest.approx(-0.5) and fit.intercept == pytest.approx(np.log(3.0))
    assert fit.stderr == pytest.approx(0.0, abs=1e-12)
    shifted = fit_exponent(x, 0.2 + 3.0 * x ** -0.5, offset=0.2)
    assert shifted.slope == pytest.approx(-0.5)
    assert fit_exponent(x, 0.2 + 3.0 * x ** -0.5).slope > -0.5  # ignoring it flattens
    two = fit_exponent([2.0, 4.0], [1.0, 0.25])
    assert two.slope == pytest.approx(-2.0) and np.isnan(two.stderr) and np.isnan(two.low)


def test_exponent_interval_coverage_by_simulation():
    rng = np.random.default_rng(8)
    x = np.array([10.0, 20.0, 40.0, 80.0, 160.0, 320.0])
    noise = rng.normal(0, 0.1, size=(N_SIM, x.size))
    fits = [fit_exponent(x, 2.0 * x ** -1.0 * np.exp(e)) for e in noise]
    assert np.mean([f.low <= -1.0 <= f.high for f in fits]) >= 0.95 - COVERAGE_TOL


@PROPERTY
@given(c1=st.floats(0.5, 0.99), c2=st.floats(0.5, 0.99), seed=st.integers(0, 1000))
def test_exponent_interval_nested_by_confidence(c1, c2, seed):
    x = np.array([1.0, 3.0, 9.0, 27.0])
    y = x ** 0.3 * np.exp(np.random.default_rng(seed).normal(0, 0.2, size=4))
    lo_c, hi_c = sorted((c1, c2))
    a, b = fit_exponent(x, y, confidence=lo_c), fit_exponent(x, y, confidence=hi_c)
    assert b.low <= a.low + 1e-12 <= a.slope + 1e-12 and a.high <= b.high + 1e-12


@pytest.mark.parametrize("call,match", [
    (lambda: fit_exponent([1.0, 0.0, 2.0], [1.0, 1.0, 1.0]), "x must be > 0"),
    (lambda: fit_exponent([1.0, -2.0], [1.0, 1.0]), "x must be > 0"),
    (lambda: fit_exponent([1.0, 2.0], [1.0, 0.0]), "y - offset must be > 0"),
    (lambda: fit_exponent([1.0, 2.0], [1.0, 0.5], offset=0.7), "y - offset must be > 0"),
    (lambda: fit_exponent([1.0, np.nan], [1.0, 0.5]), "x must be finite"),
    (lambda: fit_exponent([1.0, 2.0], [np.inf, 0.5]), "y must be finite"),
    (lambda: fit_exponent([1.0, 2.0, 3.0], [1.0, 0.5]), "x and y must have one length"),
    (lambda: fit_exponent([2.0, 2.0, 2.0], [1.0, 0.5, 0.7]), "at least two distinct"),
    (lambda: fit_exponent([1.0, 2.0], [1.0, 0.5], offset=np.nan), "offset must be a finite"),
    (lambda: fit_exponent([1.0, 2.0], [1.0, 0.5], confidence=1.0), "confidence"),
])
def test_exponent_fit_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
