"""Collision probabilities (Datar et al. 2004; Charikar 2002; Baykal et al. 2022 §2.2): closed
forms against a numeric integral and against empirical rates with exact binomial intervals."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from routing.collision import (
    clopper_pearson,
    collision_probability_euclidean,
    collision_probability_hyperplane,
    empirical_collision_rate,
    pairs_at_angles,
    pairs_at_distances,
)
from routing.collision import collision_probability_cross_polytope
from routing.cross_polytope_lsh import CrossPolytopeLSH
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH


def _datar_integral(u, w):
    """p(u) = ∫_0^w (1/u) f(t/u) (1 - t/w) dt, f the density of |N(0, 1)| (Datar et al. 2004)."""
    f = lambda t: 2 * stats.norm.pdf(t / u) / u * (1 - t / w)  # noqa: E731
    return integrate.quad(f, 0, w, epsabs=1e-13, epsrel=1e-12, limit=200)[0]


@pytest.mark.parametrize("w", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("u", [1e-3, 0.05, 0.4, 1.0, 2.5, 10.0, 300.0])
def test_closed_form_matches_the_integral(u, w):
    assert collision_probability_euclidean(u, w) == pytest.approx(_datar_integral(u, w), rel=1e-9, abs=1e-13)


def test_euclidean_limits_monotonicity_and_powers():
    w = 1.0
    assert collision_probability_euclidean(0.0, w) == 1.0
    # p(u) -> 1 as u -> 0, with slope -sqrt(2/pi)/w at 0
    for u in [1e-2, 1e-4, 1e-8]:
        assert 1 - collision_probability_euclidean(u, w) == pytest.approx(math.sqrt(2 / math.pi) * u / w, rel=2 * u)
    # for u >> w, p(u) ~ w / (sqrt(2 pi) u): relative precision kept, no cancellation to 0
    for u in [1e3, 1e6, 1e9]:
        assert collision_probability_euclidean(u, w) == pytest.approx(w / (math.sqrt(2 * math.pi) * u), rel=1e-5)
    u = np.linspace(0, 20, 2001)
    p = collision_probability_euclidean(u, w)
    assert p.shape == u.shape and (np.diff(p) < 0).all() and (p >= 0).all() and (p <= 1).all()
    np.testing.assert_allclose(collision_probability_euclidean(u, w, n_hashes=3), p**3)
    # it only depends on u / w
    np.testing.assert_allclose(collision_probability_euclidean(3 * u, 3 * w), p, rtol=1e-13)
    assert isinstance(collision_probability_euclidean(0.5, w), float)
    assert collision_probability_euclidean([[0.5]], w).shape == (1, 1)


def test_hyperplane_closed_form():
    theta = np.array([0.0, np.pi / 4, np.pi / 2, np.pi])
    np.testing.assert_allclose(collision_probability_hyperplane(theta), [1.0, 0.75, 0.5, 0.0])
    np.testing.assert_allclose(collision_probability_hyperplane(theta, n_bits=4), [1.0, 0.75**4, 0.5**4, 0.0])
    assert collision_probability_hyperplane(np.pi / 3) == pytest.approx(2 / 3)


@pytest.mark.parametrize("k,n", [(0, 10), (3, 10), (10, 10), (517, 2000), (1, 1)])
def test_clopper_pearson_matches_scipy_binomtest(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.99, method="exact")
    assert clopper_pearson(k, n, 0.99) == pytest.approx((ci.low, ci.high), abs=1e-12)
    low, high = clopper_pearson(np.array([k, k]), n, 0.99)
    assert low.shape == (2,) and low[0] == pytest.approx(ci.low, abs=1e-12)


def test_pair_helpers_give_exact_distances_and_angles():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 5))
    d = rng.uniform(0, 3, 50)
    np.testing.assert_allclose(np.linalg.norm(pairs_at_distances(X, d, seed=1) - X, axis=1), d, rtol=1e-12)
    th = rng.uniform(0, np.pi, 50)
    X2 = pairs_at_angles(X, th, seed=1)
    np.testing.assert_allclose(np.linalg.norm(X2, axis=1), np.linalg.norm(X, axis=1), rtol=1e-12)
    cos = np.einsum("nd,nd->n", X, X2) / np.linalg.norm(X, axis=1) ** 2
    np.testing.assert_allclose(np.arccos(np.clip(cos, -1, 1)), th, atol=1e-7)
    np.testing.assert_array_equal(pairs_at_distances(X, 1.0, seed=3), pairs_at_distances(X, 1.0, seed=3))


def test_euclidean_empirical_rate_interval_contains_the_closed_form():
    w = 1.0
    hasher = EuclideanLSH(6, n_hashes=8, width=w, n_tables=250, seed=0)  # 2000 hash functions
    distances = np.array([0.05, 0.25, 0.5, 1.0, 2.0, 4.0])
    X = np.random.default_rng(1).uniform(-1, 1, (len(distances), 6))
    X2 = pairs_at_distances(X, distances, seed=2)
    est = empirical_collision_rate(hasher, X, X2, confidence=0.999)
    assert est.n_trials == 2000 and est.level == "hash"
    np.testing.assert_allclose(est.distance, distances, rtol=1e-12)
    p = collision_probability_euclidean(distances, w)
    assert ((est.ci_low <= p) & (p <= est.ci_high)).all(), (est.rate, p)
    # the intervals are narrow enough to tell neighbouring distances apart (the test can fail)
    p_wrong = collision_probability_euclidean(1.5 * distances[1:], w)
    assert not ((est.ci_low[1:] <= p_wrong) & (p_wrong <= est.ci_high[1:])).any()
    # full keys of 8 hashes: one trial per table
    key = empirical_collision_rate(hasher, X, X2, level="key", confidence=0.999)
    assert key.n_trials == 250
    p8 = collision_probability_euclidean(distances, w, n_hashes=8)
    assert ((key.ci_low <= p8) & (p8 <= key.ci_high)).all(), (key.rate, p8)


def test_hyperplane_empirical_rate_interval_contains_the_closed_form():
    hasher = HyperplaneLSH(8, n_bits=16, n_tables=125, seed=3)  # 2000 hyperplanes
    angles = np.array([0.05, 0.3, 0.8, 1.5, 2.2, 3.0])
    X = np.random.default_rng(4).standard_normal((len(angles), 8))
    X2 = pairs_at_angles(X, angles, seed=5)
    est = empirical_collision_rate(hasher, X, X2, confidence=0.999)
    assert est.n_trials == 2000
    np.testing.assert_allclose(est.angle, angles, atol=1e-7)
    p = collision_probability_hyperplane(angles)
    assert ((est.ci_low <= p) & (p <= est.ci_high)).all(), (est.rate, p)
    key = empirical_collision_rate(hasher, X, X2, level="key", confidence=0.999)
    p16 = collision_probability_hyperplane(angles, n_bits=16)
    assert ((key.ci_low <= p16) & (p16 <= key.ci_high)).all(), (key.rate, p16)


def test_empirical_rate_counts_match_a_direct_count():
    hasher = EuclideanLSH(3, n_hashes=3, width=0.7, n_tables=4, seed=1)
    rng = np.random.default_rng(0)
    X, X2 = rng.uniform(-1, 1, (20, 3)), rng.uniform(-1, 1, (20, 3))
    est = empirical_collision_rate(hasher, X, X2)
    direct = (hasher.hash(X) == hasher.hash(X2)).sum(axis=(1, 2))
    np.testing.assert_array_equal(est.n_collisions, direct)
    est = empirical_collision_rate(hasher, X, X2, level="key")
    np.testing.assert_array_equal(est.n_collisions, (hasher.bucket_ids(X) == hasher.bucket_ids(X2)).sum(1))
    # hyperplane bits, counted from the signs of the projections
    hasher = HyperplaneLSH(3, n_bits=64, n_tables=3, seed=2)
    signs = lambda Z: np.einsum("nd,tbd->ntb", Z, hasher.directions) >= 0  # noqa: E731
    est = empirical_collision_rate(hasher, X, X2)
    np.testing.assert_array_equal(est.n_collisions, (signs(X) == signs(X2)).sum(axis=(1, 2)))


def test_bad_input_raises_value_error_naming_the_parameter():
    with pytest.raises(ValueError, match=r"u must be finite and in \[0, inf\)"):
        collision_probability_euclidean(-0.1, 1.0)
    with pytest.raises(ValueError, match="u must be finite"):
        collision_probability_euclidean([0.1, np.nan], 1.0)
    with pytest.raises(ValueError, match=r"width must be a finite real number in \(0, inf\]"):
        collision_probability_euclidean(0.1, 0.0)
    with pytest.raises(ValueError, match="n_hashes must be an integer >= 1"):
        collision_probability_euclidean(0.1, 1.0, n_hashes=0)
    with pytest.raises(ValueError, match=r"theta must be finite and in \[0, 3.14159\]"):
        collision_probability_hyperplane(4.0)
    with pytest.raises(ValueError, match="n_bits must be an integer >= 1"):
        collision_probability_hyperplane(1.0, n_bits=0)
    with pytest.raises(ValueError, match="k must be integers in"):
        clopper_pearson(11, 10)
    with pytest.raises(ValueError, match="confidence"):
        clopper_pearson(1, 10, confidence=1.0)
    hasher = EuclideanLSH(3, n_hashes=2, width=1.0, seed=0)
    X = np.zeros((4, 3))
    with pytest.raises(ValueError, match="level must be 'hash' or 'key'"):
        empirical_collision_rate(hasher, X, X, level="bits")
    with pytest.raises(ValueError, match="X2 must have the same number of rows"):
        empirical_collision_rate(hasher, X, X[:2])
    with pytest.raises(ValueError, match=r"X2 must have shape \(N, 3\)"):
        empirical_collision_rate(hasher, X, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="X must be finite"):
        empirical_collision_rate(hasher, np.full((4, 3), np.inf), X)

    class Keys:
        dim, n_tables = 3, 1

        def bucket_ids(self, X):
            return np.zeros((len(X), 1), np.int64)

    with pytest.raises(ValueError, match="use level='key'"):
        empirical_collision_rate(Keys(), X, X)
    assert empirical_collision_rate(Keys(), X, X, level="key").rate.tolist() == [1.0] * 4
    with pytest.raises(ValueError, match="distances must be finite"):
        pairs_at_distances(X, -1.0)
    with pytest.raises(ValueError, match="non-zero rows"):
        pairs_at_angles(X, 1.0)


# -- extreme input: no hang, no overflow -----------------------------------------------------
def test_pairs_at_distances_with_no_columns_raises_instead_of_hanging():
    with pytest.raises(ValueError, match="at least 1 column"):
        pairs_at_distances(np.zeros((3, 0)), 0.5)


def test_collision_probability_euclidean_at_extreme_ratio():
    assert collision_probability_euclidean(1e308, 1e-308) == 0.0
    assert collision_probability_euclidean(1e-308, 1e308) == 1.0
    small = collision_probability_euclidean(1e6, 1e-3)  # series and closed form agree
    assert small == pytest.approx(math.sqrt(2 / math.pi) * 1e-9 / 2, rel=1e-9)


def test_pairs_at_angles_does_not_overflow_on_large_finite_rows():
    X = np.full((2, 3), 1e300)
    X2_ = pairs_at_angles(X, 1.0)
    cos = np.einsum("nd,nd->n", X / 1e300, X2_ / 1e300) / 3.0
    np.testing.assert_allclose(cos, math.cos(1.0), rtol=1e-12)
    with pytest.raises(ValueError, match="X is too large"):
        pairs_at_angles(np.full((2, 3), 1.7e308), 1.0)


# -- cross-polytope collisions ---------------------------------------------------------------
def _gaussian_monte_carlo(theta: float, dim: int, n: int, seed: int) -> int:
    rng = np.random.default_rng(seed)
    u = rng.standard_normal((n, dim))
    v = math.cos(theta) * u + math.sin(theta) * rng.standard_normal((n, dim))
    iu, iv = np.abs(u).argmax(1), np.abs(v).argmax(1)
    rows = np.arange(n)
    return int(((iu == iv) & (np.sign(u[rows, iu]) == np.sign(v[rows, iv]))).sum())


@pytest.mark.parametrize("theta, dim", [(0.3, 2), (1.0, 4), (1.0, 16), (2.0, 16)])
def test_cross_polytope_probability_matches_gaussian_monte_carlo(theta, dim):
    n = 40_000
    hits = _gaussian_monte_carlo(theta, dim, n, seed=dim)
    low, high = clopper_pearson(hits, n, 0.999)
    assert low <= collision_probability_cross_polytope(theta, dim) <= high


def test_cross_polytope_probability_edge_cases():
    assert collision_probability_cross_polytope(0.0, 8) == 1.0
    assert collision_probability_cross_polytope(math.pi, 8) == 0.0
    # d = 1: the sign hash, 1 − θ/π
    assert collision_probability_cross_polytope(1.0, 1) == pytest.approx(1 - 1 / math.pi)
    p = collision_probability_cross_polytope(np.array([0.5, 1.0]), 16, n_hashes=2)
    np.testing.assert_allclose(p, collision_probability_cross_polytope(np.array([0.5, 1.0]), 16) ** 2)
    with pytest.raises(ValueError, match="theta"):
        collision_probability_cross_polytope(4.0, 8)
    with pytest.raises(ValueError, match="dim"):
        collision_probability_cross_polytope(1.0, 0)


def test_cross_polytope_probability_matches_cross_polytope_lsh():
    """The pseudo-random rotation of CrossPolytopeLSH at d = 64: the collision count of each
    pair over 3000 tables falls in the 99.9 % Clopper–Pearson interval around the formula."""
    hasher = CrossPolytopeLSH(64, 1, n_tables=3000, seed=3)
    X = np.random.default_rng(0).standard_normal((3, 64))
    for theta in (0.5, 1.0):
        same = (hasher.hash(X) == hasher.hash(pairs_at_angles(X, theta, seed=1)))[:, :, 0]
        low, high = clopper_pearson(same.sum(1), 3000, 0.999)
        p = collision_probability_cross_polytope(theta, hasher.padded_dim)
        assert np.all((low <= p) & (p <= high))


def test_cross_polytope_probability_follows_andoni_theorem_1():
    """Andoni et al. 2015, Theorem 1: ln(1/p) = τ²/(4 − τ²)·ln d + O(ln ln d), τ = 2 sin(θ/2),
    i.e. ln(1/p)/ln d → tan²(θ/2). The gap shrinks as d grows, and stays O(ln ln d); the
    brief's (1/4)·tan² would be refuted by a factor of 4."""
    theta = math.pi / 3
    exponent = math.tan(theta / 2) ** 2
    assert exponent == pytest.approx(1.0 / 3.0)  # τ = 1: τ²/(4 − τ²) = 1/3
    gaps = []
    for log2_d in (10, 20, 40):
        d = 2**log2_d
        ratio = math.log(1 / collision_probability_cross_polytope(theta, d)) / math.log(d)
        gaps.append(ratio - exponent)
        assert 0 < (ratio - exponent) * math.log(d) / math.log(math.log(d)) < 2.0
    assert gaps[0] > gaps[1] > gaps[2] > 0
    assert abs(gaps[2]) < 0.06 and abs(ratio - exponent / 4) > 0.25
