"""Tests of routing.sdm, continuous SDM: cap and cap-intersection fractions of the sphere."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from routing.sdm import cap_fraction, cap_intersection_fraction
from routing.sdm._continuous import _log_cap, _log_integrate


def _sphere(n: int, size: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((size, n))  # (size, n)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _inside_ci(hits: int, size: int, value: float, confidence: float = 0.9999) -> bool:
    ci = stats.binomtest(hits, size).proportion_ci(confidence_level=confidence, method="exact")
    return ci.low <= value <= ci.high


def test_cap_fraction_closed_forms():
    t = np.linspace(-1, 1, 41)
    np.testing.assert_allclose(cap_fraction(2, t), np.arccos(t) / np.pi, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(cap_fraction(3, t), (1 - t) / 2, rtol=1e-13, atol=1e-15)  # Archimedes
    assert cap_fraction(100, 0.0) == pytest.approx(0.5, rel=1e-14)
    assert cap_fraction(50, -1.0) == 1.0 and cap_fraction(50, 1.0) == 0.0


@pytest.mark.parametrize("n", [2, 3, 10, 64])
def test_cap_fraction_matches_monte_carlo_on_the_sphere(n):
    x = _sphere(n, 200_000, seed=n)
    for t in (-0.6, -0.1, 0.0, 0.2, 0.5):
        hits = int(np.count_nonzero(x[:, 0] >= t))
        assert _inside_ci(hits, x.shape[0], cap_fraction(n, t)), (n, t)


@pytest.mark.parametrize("n", [2, 3, 10, 64])
def test_cap_intersection_matches_monte_carlo_on_the_sphere(n):
    x = _sphere(n, 200_000, seed=100 + n)
    for t in (-0.5, 0.0, 0.15, 0.4):
        for rho in (-0.7, 0.0, 0.6, 0.95):
            b = np.zeros(n)
            b[:2] = rho, math.sqrt(1 - rho * rho)
            hits = int(np.count_nonzero((x[:, 0] >= t) & (x @ b >= t)))
            assert _inside_ci(hits, x.shape[0], cap_intersection_fraction(n, t, rho)), (n, t, rho)


def _planar_reference(n: int, t: float, rho: float) -> float:
    """Independent formula: the projection of S^(n-1) (n >= 4) onto the plane of the two centres
    has density (n - 2)/(2π) (1 - |p|^2)^((n-4)/2) on the unit disc; integrate it over the lens."""
    ch, sh = math.sqrt((1 + rho) / 2), math.sqrt((1 - rho) / 2)

    def q_max(p):
        return max(0.0, min(math.sqrt(max(1 - p * p, 0.0)), (p * ch - t) / sh))

    density = lambda q, p: (n - 2) / (2 * math.pi) * max(1 - p * p - q * q, 0.0) ** ((n - 4) / 2)  # noqa: E731
    return integrate.dblquad(density, max(-1.0, t / ch), 1.0, lambda p: -q_max(p), q_max, epsabs=0, epsrel=1e-12)[0]


@pytest.mark.parametrize("n", [5, 8, 20])
def test_cap_intersection_matches_a_planar_double_integral(n):
    for t in (-0.5, 0.2, 0.5):
        for rho in (-0.3, 0.4, 0.9):
            assert cap_intersection_fraction(n, t, rho) == pytest.approx(_planar_reference(n, t, rho), rel=1e-9)


def _first_centre_log_reference(n: int, t: float, rho: float) -> float:
    """Independent formula: integrate over u = x·a the fraction of the conditional S^(n-2) whose
    point has x·b >= t, i.e. a cap of S^(n-2) with threshold (t - uρ)/(sqrt(1-u²) sqrt(1-ρ²))."""
    k, log_norm, sr = 0.5 * (n - 3), float(special.betaln(0.5, 0.5 * (n - 1))), math.sqrt(1 - rho * rho)

    def log_f(u):
        u = np.atleast_1d(np.asarray(u, dtype=np.float64))
        s = (t - u * rho) / (np.sqrt((1 - u) * (1 + u)) * sr)
        cap = np.array([_log_cap(n - 1, float(np.clip(v, -1, 1))) if np.isfinite(v) else -np.inf for v in s])
        out = k * (np.log1p(-u) + np.log1p(u)) - log_norm + cap
        return out if out.size > 1 else out[0]

    return _log_integrate(log_f, t, 1.0)


@pytest.mark.parametrize("n,t,rho", [(10_000, 0.5, 0.9), (10_000, 0.2, 0.5), (10_000, 0.3, -0.5), (2_000, 0.6, 0.8)])
def test_cap_intersection_is_finite_and_correct_in_log_space_for_large_n(n, t, rho):
    value = cap_intersection_fraction(n, t, rho, log=True)
    assert math.isfinite(value) and value < -200  # far below the float64 range: log space is needed
    assert value == pytest.approx(_first_centre_log_reference(n, t, rho), abs=1e-8)
    assert cap_intersection_fraction(n, t, rho) == 0.0 or value > -745


def test_cap_fraction_tail_in_log_space_matches_high_precision_quadrature():
    import mpmath as mp

    mp.mp.dps = 40
    for n, t in ((10_000, 0.5), (10_000, 0.9), (3_000, 0.7)):
        k, T = mp.mpf(n - 3) / 2, mp.mpf(t)
        nodes = [T] + [T + (1 - T) * mp.mpf(10) ** -e for e in range(8, 0, -1)] + [mp.mpf(1)]
        tail = mp.quad(lambda u: mp.exp(k * (mp.log(1 - u * u) - mp.log(1 - T * T))), nodes)
        ref = mp.log(tail) + k * mp.log(1 - T * T) - mp.log(mp.beta(mp.mpf(1) / 2, mp.mpf(n - 1) / 2))
        assert cap_fraction(n, t, log=True) == pytest.approx(float(ref), abs=1e-9)


def test_cap_intersection_special_cases_and_monotonicity():
    n = 30
    assert cap_intersection_fraction(n, 0.3, 1.0) == pytest.approx(cap_fraction(n, 0.3), rel=1e-14)
    assert cap_intersection_fraction(n, -1.0, -0.4) == 1.0
    assert cap_intersection_fraction(n, 1.0, 0.4) == 0.0
    assert cap_intersection_fraction(n, 0.3, -1.0) == 0.0  # antipodal centres, t > 0
    assert cap_intersection_fraction(n, -0.3, -1.0) == pytest.approx(1 - 2 * cap_fraction(n, 0.3), rel=1e-12)
    assert cap_intersection_fraction(n, 0.6, 2 * 0.6**2 - 1 - 1e-9, log=True) == -math.inf  # caps apart
    rho = np.linspace(-0.9, 1.0, 30)
    values = cap_intersection_fraction(n, 0.2, rho)
    assert values.shape == (30,) and np.all(np.diff(values) > 0)
    assert np.all(values <= cap_fraction(n, 0.2) * (1 + 1e-12))
    np.testing.assert_allclose(cap_intersection_fraction(n, 0.2, rho, log=True), np.log(values), rtol=1e-12)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: cap_fraction(10, 1.5), "t"),
        (lambda: cap_fraction(10, np.array([0.0, -1.2])), "t"),
        (lambda: cap_fraction(1, 0.5), "n"),
        (lambda: cap_intersection_fraction(10, 0.5, 1.01), "cos_between"),
        (lambda: cap_intersection_fraction(10, -1.01, 0.5), "t"),
        (lambda: cap_intersection_fraction(10, 0.5, np.array([0.1, np.nan])), "cos_between"),
        (lambda: cap_intersection_fraction(10.5, 0.5, 0.1), "n"),
    ],
)
def test_bad_input_raises_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call()
