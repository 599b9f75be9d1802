"""Tests of routing.sdm, binary SDM: circle intersection, its validators, the softmax fit, App. A.7."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from routing.sdm import (
    brute_force_intersection,
    check_exponential_weighting,
    check_linear_weighting,
    circle_intersection,
    cosine_to_hamming,
    expected_neurons_in_intersection,
    fit_softmax_beta,
    hamming_to_cosine,
    monte_carlo_intersection,
    snr_optimal_radius,
    space_fraction,
)
from routing.sdm import cap_fraction, cap_intersection_fraction
from routing.sdm._intersection import _reference_one

WEIGHTINGS = [("binary", None), ("linear", None), ("exponential", 0.0), ("exponential", 0.37)]


def _log_exact(value) -> float:
    """Natural log of a positive Python int or Fraction, without converting it to a float."""
    if isinstance(value, Fraction):
        return math.log(value.numerator) - math.log(value.denominator)
    return math.log(value)


# ---------------------------------------------------------------- the formula against enumeration
@pytest.mark.parametrize("weighting,beta", WEIGHTINGS)
def test_brute_force_equals_formula_for_every_d_and_dv_at_n12(weighting, beta):
    n = 12
    dv = np.arange(n + 1)
    for d in range(n + 1):
        fast = circle_intersection(n, d, dv, weighting, beta)
        for k in range(n + 1):
            brute = brute_force_intersection(n, d, k, weighting, beta)
            assert _reference_one(n, d, k, weighting, beta) == pytest.approx(brute, rel=1e-14, abs=0)
            assert fast[k] == pytest.approx(float(brute), rel=1e-13, abs=0)
            if weighting != "exponential":
                assert circle_intersection(n, d, k, weighting, exact=True) == brute  # exact int / Fraction


def test_fast_kernel_matches_the_plain_double_sum_reference():
    for n in (1, 2, 7, 33):
        for d in range(n + 1):
            for weighting, beta in WEIGHTINGS:
                fast = circle_intersection(n, d, np.arange(n + 1), weighting, beta)
                ref = np.array([float(_reference_one(n, d, k, weighting, beta)) for k in range(n + 1)])
                np.testing.assert_allclose(fast, ref, rtol=1e-13, atol=0)


def test_exponential_weighting_with_beta_zero_is_the_binary_count():
    dv = np.arange(201)
    np.testing.assert_array_equal(
        circle_intersection(200, 70, dv, "exponential", 0.0, log=True), circle_intersection(200, 70, dv, log=True)
    )


def test_tails_have_closed_forms_and_vanish_beyond_2d():
    # d_v = 2d: only the points at distance d from both centres, C(2d, d) of them.
    for n, d in ((40, 7), (300, 120), (1000, 451)):
        assert circle_intersection(n, d, 2 * d, exact=True) == math.comb(2 * d, d)
        assert circle_intersection(n, d, 2 * d, log=True) == pytest.approx(math.log(math.comb(2 * d, d)), abs=1e-12)
        if 2 * d + 1 <= n:
            assert circle_intersection(n, d, 2 * d + 1, exact=True) == 0
            assert circle_intersection(n, d, 2 * d + 1, log=True) == -math.inf
            assert circle_intersection(n, d, 2 * d + 1) == 0.0
    # d_v = 0: the whole ball.
    assert circle_intersection(50, 9, 0, exact=True) == sum(math.comb(50, k) for k in range(10))


def test_unweighted_count_pairs_odd_and_even_distances():
    for n in (10, 31, 64, 200):
        for d in range(0, n + 1, max(1, n // 10)):
            counts = circle_intersection(n, d, np.arange(n + 1), exact=True)
            for k in range(1, n // 2 + 1):
                assert counts[2 * k - 1] == counts[2 * k], (n, d, k)


# ---------------------------------------------------------------- accuracy and large n
@pytest.mark.parametrize("n,radii", [(1, (0, 1)), (50, (0, 7, 25, 50)), (333, (100, 166, 333)), (1000, (451, 999))])
def test_log_space_agrees_with_exact_integers_on_the_whole_curve(n, radii):
    dv = np.arange(n + 1)
    for d in radii:
        for weighting in ("binary", "linear"):
            exact = circle_intersection(n, d, dv, weighting, exact=True)
            logs = circle_intersection(n, d, dv, weighting, log=True)
            for k in range(n + 1):
                if exact[k] == 0:
                    assert logs[k] == -math.inf
                else:  # |log a - log b| <= 1e-12  <=>  relative error <= 1e-12
                    assert abs(logs[k] - _log_exact(exact[k])) <= 1e-12, (n, d, k, weighting)
            if n <= 1000 and weighting == "binary":
                floats = circle_intersection(n, d, dv)
                ref = np.array([float(v) for v in exact])
                np.testing.assert_allclose(floats, ref, rtol=1e-12, atol=0)


def test_n_ten_thousand_is_finite_and_correct():
    n, d = 10_000, 4_000
    dv = np.arange(n + 1)
    logs = circle_intersection(n, d, dv, log=True)
    assert np.all(np.isfinite(logs[: 2 * d + 1])) and np.all(logs[2 * d + 1:] == -np.inf)
    assert np.all(np.diff(logs[: 2 * d + 1]) <= 1e-9)  # the intersection shrinks with d_v
    for k in (0, 1, 2, 1_001, 4_000, 7_999, 8_000):
        assert logs[k] == pytest.approx(_log_exact(circle_intersection(n, d, k, exact=True)), abs=1e-10)
    lin = circle_intersection(n, d, [0, 3_000, 8_000], "linear", log=True)
    exact = circle_intersection(n, d, [0, 3_000, 8_000], "linear", exact=True)
    np.testing.assert_allclose(lin, [_log_exact(v) for v in exact], rtol=0, atol=1e-10)
    expo = circle_intersection(n, d, np.array([0, 5_000, 8_000]), "exponential", 2.0, log=True)
    assert np.all(np.isfinite(expo))
    with pytest.raises(ValueError, match="log"):  # 2^10000-sized counts do not fit a float64
        circle_intersection(n, d, 0)


def test_shapes_types_and_determinism():
    assert isinstance(circle_intersection(10, 3, 2, exact=True), int)
    assert isinstance(circle_intersection(10, 3, 2, "linear", exact=True), Fraction)
    assert isinstance(circle_intersection(10, 3, 2), float)
    grid = np.array([[0, 1], [5, 10]])
    out = circle_intersection(10, 3, grid, log=True)
    assert out.shape == (2, 2) and out.dtype == np.float64
    exact = circle_intersection(10, 3, grid, exact=True)
    assert exact.shape == (2, 2) and exact.dtype == object
    np.testing.assert_array_equal(out, circle_intersection(10, 3, grid, log=True))


# ---------------------------------------------------------------- Monte Carlo validator
@pytest.mark.parametrize("weighting,beta", [("binary", None), ("linear", None), ("exponential", 0.05)])
def test_monte_carlo_agrees_within_its_confidence_interval_at_n64(weighting, beta):
    n = 64
    for d, k in ((28, 0), (28, 9), (30, 25), (31, 40)):
        mc = monte_carlo_intersection(n, d, k, r=200_000, weighting=weighting, beta=beta, seed=1000 * d + k,
                                      confidence=0.999)
        fraction = expected_neurons_in_intersection(n, d, k, 1, weighting, beta)
        assert mc.contains(fraction), (d, k, mc, fraction)
        if weighting == "binary" and k > 0:
            # the validator has power: the count for a radius one larger lies outside the interval
            assert not mc.contains(expected_neurons_in_intersection(n, d + 1, k, 1))


def test_monte_carlo_is_reproducible_and_expected_neurons_scale_with_r():
    a = monte_carlo_intersection(40, 15, 6, 10_000, seed=3)
    assert a == monte_carlo_intersection(40, 15, 6, 10_000, seed=3)
    assert a != monte_carlo_intersection(40, 15, 6, 10_000, seed=4)
    e1 = expected_neurons_in_intersection(40, 15, 6, 1)
    assert expected_neurons_in_intersection(40, 15, 6, 10_000) == pytest.approx(10_000 * e1, rel=1e-14)
    assert e1 == pytest.approx(circle_intersection(40, 15, 6, exact=True) / 2**40, rel=1e-14)


# ---------------------------------------------------------------- Hamming-space helpers
def test_kanerva_1988_one_thousandth_of_the_space_within_451_of_1000_bits():
    p = space_fraction(1000, 451)
    assert 0.0009 < p < 0.0012
    assert p == pytest.approx(stats.binom.cdf(451, 1000, 0.5), rel=1e-10)
    assert p == pytest.approx(float(space_fraction(1000, 451, exact=True)), rel=1e-12)


def test_space_fraction_matches_the_binomial_cdf_and_stays_finite_in_log_space():
    for n in (1, 17, 64, 500):
        for d in range(0, n + 1, max(1, n // 7)):
            assert space_fraction(n, d) == pytest.approx(stats.binom.cdf(d, n, 0.5), rel=1e-10)
    assert space_fraction(10_000, 10, log=True) == pytest.approx(
        math.log(sum(math.comb(10_000, k) for k in range(11))) - 10_000 * math.log(2), abs=1e-9)
    with pytest.raises(ValueError, match="log"):
        space_fraction(10_000, 10)


def test_hamming_cosine_maps_are_inverse():
    dv = np.arange(65)
    cos = hamming_to_cosine(dv, 64)
    assert cos[0] == 1.0 and cos[32] == 0.0 and cos[64] == -1.0
    np.testing.assert_allclose(cosine_to_hamming(cos, 64), dv, atol=1e-12)
    assert cosine_to_hamming(0.5, 100) == 25.0


@pytest.mark.parametrize("n,r,m", [(64, 2**16, 2**10), (256, 1_000, 10), (1000, 10**6, 10**4), (30, 1, 1)])
def test_snr_optimal_radius_is_the_smallest_radius_reaching_p_star(n, r, m):
    p_star = (2 * m * r) ** (-1 / 3)
    d = snr_optimal_radius(n, r, m)
    assert stats.binom.cdf(d, n, 0.5) >= p_star * (1 - 1e-12)
    assert d == 0 or stats.binom.cdf(d - 1, n, 0.5) < p_star


# ---------------------------------------------------------------- softmax fit
def test_fit_is_the_documented_ordinary_least_squares_line():
    fit = fit_softmax_beta(64, 11)
    np.testing.assert_array_equal(fit.d_v, np.arange(11))
    x, y = 1 - 2 * np.arange(11) / 64, circle_intersection(64, 11, np.arange(11), log=True)
    slope, intercept = np.polyfit(x, y, 1)
    assert fit.beta == pytest.approx(slope, rel=1e-12) and fit.intercept == pytest.approx(intercept, rel=1e-12)
    lr = stats.linregress(x, y)
    assert fit.r_squared == pytest.approx(lr.rvalue**2, rel=1e-12)
    np.testing.assert_allclose(fit.predict_log(fit.cosine), intercept + slope * x, rtol=1e-12)


def test_fitted_beta_grows_as_the_radius_shrinks_and_matches_the_continuous_fit_at_large_n():
    betas = [fit_softmax_beta(64, d).beta for d in (5, 11, 15)]
    assert betas[0] > betas[1] > betas[2] > 0
    assert all(fit_softmax_beta(64, d).r_squared > 0.85 for d in (5, 11, 15))
    binary, continuous = fit_softmax_beta(1000, 451), fit_softmax_beta(1000, 451, continuous=True)
    assert continuous.beta == pytest.approx(binary.beta, rel=0.05)
    same = fit_softmax_beta(200, 60, weighting="exponential", beta=0.0)
    assert same.beta == fit_softmax_beta(200, 60).beta
    custom = fit_softmax_beta(64, 11, d_v=[0, 2, 4, 6])
    np.testing.assert_array_equal(custom.d_v, [0, 2, 4, 6])


# ---------------------------------------------------------------- App. A.7 with sympy
def test_sympy_derives_eq10_linear_weighting_is_maximal_halfway():
    import sympy as sp

    check = check_linear_weighting()
    n, d_v, z = sp.symbols("n d_v z", positive=True)
    C = sp.Symbol("C", positive=True)
    assert check.holds
    assert check.stationary_points == [C / 2]
    assert sp.simplify(check.second_derivative + 2 / n**2) == 0
    assert sp.simplify(check.distance_sum - (d_v + 2 * z)) == 0 and check.paper_c_at_z0


def test_sympy_derives_eq11_exponential_weighting_is_constant_in_x():
    import sympy as sp

    check = check_exponential_weighting()
    beta, d_v, z = sp.symbols("beta d_v z", positive=True)
    assert check.holds
    assert sp.simplify(check.weight - sp.exp(-beta * (d_v + 2 * z))) == 0
    assert check.depends_on_z  # one constant per (d_v, z) shell, not per pattern


def test_exponential_weight_is_constant_within_each_shell_numerically():
    # Eq. 9 by enumeration: every point of the intersection with z coordinates disagreeing with
    # both centres has weight exp(-beta (d_v + 2z)), so the count factorises per z.
    n, d, k, beta = 12, 5, 4, 0.3
    points = np.arange(2**n, dtype=np.uint32)
    x_q = np.bitwise_count(points).astype(int)
    x_p = np.bitwise_count(points ^ np.uint32((1 << k) - 1)).astype(int)
    z = np.bitwise_count(points & np.uint32(((1 << n) - 1) ^ ((1 << k) - 1))).astype(int)
    inside = (x_q <= d) & (x_p <= d)
    np.testing.assert_allclose(np.exp(-beta * (x_q + x_p))[inside], np.exp(-beta * (k + 2 * z))[inside], rtol=1e-15)


# ---------------------------------------------------------------- bad input
BAD = [
    (lambda: circle_intersection(10, 3, 11), "d_v"),
    (lambda: circle_intersection(10, 11, 2), "d"),
    (lambda: circle_intersection(10, -1, 2), "d"),
    (lambda: circle_intersection(0, 0, 0), "n"),
    (lambda: circle_intersection(10, 3, -1), "d_v"),
    (lambda: circle_intersection(10, 3, 2.0), "d_v"),
    (lambda: circle_intersection(10, 3.5, 2), "d"),
    (lambda: circle_intersection(10.0, 3, 2), "n"),
    (lambda: circle_intersection(10, 3, np.array([1.0, 2.0])), "d_v"),
    (lambda: circle_intersection(10, 3, np.array([1, 12])), "d_v"),
    (lambda: circle_intersection(10, 3, 2, "exponential", -0.1), "beta"),
    (lambda: circle_intersection(10, 3, 2, "exponential"), "beta"),
    (lambda: circle_intersection(10, 3, 2, "linear", 0.5), "beta"),
    (lambda: circle_intersection(10, 3, 2, "cosine"), "weighting"),
    (lambda: circle_intersection(10, 3, 2, exact=True, log=True), "exact"),
    (lambda: circle_intersection(10, 3, 2, "exponential", 0.1, exact=True), "exact"),
    (lambda: expected_neurons_in_intersection(10, 3, 2, 0), "r"),
    (lambda: space_fraction(10, 11), "d"),
    (lambda: hamming_to_cosine(11, 10), "d_v"),
    (lambda: cosine_to_hamming(1.5, 10), "cosine"),
    (lambda: snr_optimal_radius(64, 0, 10), "r"),
    (lambda: snr_optimal_radius(64, 10, -3), "m"),
    (lambda: fit_softmax_beta(64, 0), "d"),
    (lambda: fit_softmax_beta(64, 1), "d"),
    (lambda: fit_softmax_beta(64, 5, d_v=[3]), "d_v"),
    (lambda: fit_softmax_beta(64, 5, d_v=[0, 11]), "d_v"),
    (lambda: fit_softmax_beta(64, 5, continuous=True, weighting="linear"), "weighting"),
    (lambda: brute_force_intersection(17, 3, 2), "n"),
    (lambda: monte_carlo_intersection(64, 3, 2, 100, confidence=1.0), "confidence"),
    (lambda: monte_carlo_intersection(64, 3, 2, 100, seed=-1), "seed"),
]


@pytest.mark.parametrize("call,name", BAD)
def test_bad_input_raises_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()


# -- flags and speed ---------------------------------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda flag: circle_intersection(16, 3, 2, log=flag),
    lambda flag: cap_fraction(8, 0.5, log=flag),
    lambda flag: cap_intersection_fraction(8, 0.5, 0.9, log=flag),
    lambda flag: space_fraction(16, 3, log=flag),
], ids=["circle_intersection", "cap_fraction", "cap_intersection", "space_fraction"])
def test_string_log_flags_are_refused_not_read_by_truthiness(call):
    with pytest.raises(ValueError, match="must be True or False, got 'False'"):
        call("False")
    call(np.bool_(False))  # numpy bools are bools


@pytest.mark.timeout(30)  # a hang guard, not a speed claim: it once took minutes (quadratic
def test_snr_optimal_radius_at_a_million_bits():  # big-integer sums); make bench times it
    d = snr_optimal_radius(10**6, 1000, 100)
    p_star = (2.0 * 100 * 1000) ** (-1 / 3)
    assert space_fraction(10**6, d) >= p_star > space_fraction(10**6, d - 1)
