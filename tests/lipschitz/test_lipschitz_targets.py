"""Targets: evaluation against independent implementations, certificates, torch twins."""

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.spatial.distance import pdist

from lipschitz import (
    RandomHypercubeFunction,
    RandomMLP,
    RandomPolynomial,
    UniformCube,
    compose_linear,
    estimate_lipschitz,
    rescale,
    target_from_config,
)
from lipschitz.mlp import ACTIVATIONS

seeds = st.integers(0, 2**31 - 1)


@st.composite
def targets(draw):
    family = draw(st.sampled_from(["poly", "cube", "mlp"]))
    seed = draw(seeds)
    if family == "poly":
        return RandomPolynomial(draw(st.integers(1, 6)), draw(st.integers(0, 4)),
                                lipschitz=draw(st.floats(0.1, 10.0)), seed=seed)
    if family == "cube":
        return RandomHypercubeFunction(draw(st.integers(1, 9)), seed=seed)
    hidden = tuple(draw(st.lists(st.integers(1, 24), min_size=0, max_size=3)))
    return RandomMLP(draw(st.integers(1, 6)), hidden, draw(st.sampled_from(sorted(ACTIVATIONS))),
                     seed=seed)


def _points(n_inputs, seed, n=400):
    """Uniform points plus cube corners (where multilinear targets are steepest)."""
    X = UniformCube(n_inputs).sample(n, seed)
    if n_inputs <= 9:
        X = np.vstack([X, RandomHypercubeFunction(n_inputs).corners()])
    return X


@given(targets(), seeds)
@example(RandomMLP(1, (), "relu", seed=7), 1)  # once failed on cancellation at 1.5e-8 relative
def test_empirical_lipschitz_never_exceeds_certificate(f, seed):
    X = _points(f.n_inputs, seed % 1000)
    if f.lipschitz_bound == 0.0:  # constants: equal values, up to the rounding of their sum
        values = f(X)
        assert np.ptp(values) <= 16 * np.finfo(float).eps * max(np.abs(values).max(), 1.0)
        return
    estimate = estimate_lipschitz(f, X)
    assert estimate.gradient <= f.lipschitz_bound * (1 + 1e-9)
    # f(x) - f(x') cancels: rounding errors of a few ulps of |f| are divided by ||x - x'||
    distances = pdist(X)
    rounding = 16 * np.finfo(float).eps * np.abs(f(X)).max() / distances[distances > 0].min()
    assert estimate.difference_quotient <= f.lipschitz_bound * (1 + 1e-9) + rounding


@given(targets(), seeds)
def test_numpy_and_torch_agree(f, seed):
    X = _points(f.n_inputs, seed % 1000, n=200)
    y = f(X)
    y64 = f.torch(torch.tensor(X)).numpy()
    np.testing.assert_allclose(y64, y, rtol=0, atol=1e-6)
    y32 = f.torch(torch.tensor(X, dtype=torch.float32))
    assert y32.dtype == torch.float32
    np.testing.assert_allclose(y32.numpy(), y, rtol=0, atol=1e-4 * max(1.0, np.abs(y).max()))


@given(targets(), seeds)
def test_same_seed_same_numbers_and_config_round_trip(f, seed):
    X = _points(f.n_inputs, seed % 1000, n=50)
    again = target_from_config(f.config())
    np.testing.assert_array_equal(again(X), f(X))
    assert again.lipschitz_bound == f.lipschitz_bound


@given(st.integers(1, 8), seeds)
def test_hypercube_equals_corner_values_at_corners(n, seed):
    f = RandomHypercubeFunction(n, seed=seed)
    np.testing.assert_allclose(f(f.corners()), f.corner_values, atol=1e-12)
    assert set(np.unique(f.corner_values)) <= {-1.0, 1.0}


@given(st.integers(1, 6), seeds)
def test_hypercube_matches_sum_over_corners(n, seed):
    f = RandomHypercubeFunction(n, seed=seed)
    X = UniformCube(n).sample(30, seed % 1000)
    corners = f.corners()
    indicators = np.prod((1 + corners[None, :, :] * X[:, None, :]) / 2, axis=2)  # (N, 2^n)
    np.testing.assert_allclose(f(X), indicators @ f.corner_values, atol=1e-12)


@given(st.integers(1, 6), seeds)
def test_hypercube_certificate_is_attained_at_a_corner(n, seed):
    """The bound is the exact constant: some corner's gradient has norm lipschitz_bound."""
    f = RandomHypercubeFunction(n, seed=seed)
    corners = torch.tensor(f.corners(), requires_grad=True)
    (grad,) = torch.autograd.grad(f.torch(corners).sum(), corners)
    assert grad.norm(dim=1).max().item() == pytest.approx(f.lipschitz_bound, abs=1e-12)


@given(st.integers(1, 5), st.integers(0, 4), seeds)
def test_polynomial_matches_monomial_sum_and_has_requested_degree(n, degree, seed):
    f = RandomPolynomial(n, degree, seed=seed)
    X = UniformCube(n).sample(40, seed % 1000)
    direct = np.prod(X[:, None, :] ** f.exponents[None, :, :], axis=2) @ f.coefficients
    np.testing.assert_allclose(f(X), direct, atol=1e-12)
    total = f.exponents.sum(axis=1)
    assert total.max() == degree and np.all(f.coefficients[total == degree] != 0)
    assert np.abs(f.coefficients).sum() * max(degree, 1) == pytest.approx(f.lipschitz)
    assert f.lipschitz_bound <= f.lipschitz * (1 + 1e-12)


def test_polynomial_paper_setting():
    f = RandomPolynomial(8, 4)
    assert len(f.coefficients) == 495  # C(12, 4) monomials of degree <= 4 in 8 variables
    assert np.abs(f.coefficients).sum() == pytest.approx(1 / 4)


@given(st.integers(1, 6), st.lists(st.integers(1, 16), max_size=3), seeds,
       st.floats(0.1, 10.0))
def test_mlp_rescaled_to_requested_lipschitz(n, hidden, seed, lipschitz):
    f = RandomMLP(n, tuple(hidden), seed=seed, lipschitz=lipschitz)
    assert f.lipschitz_bound == pytest.approx(lipschitz, rel=1e-9)
    X = UniformCube(n).sample(50, seed % 1000)
    h = X
    for W, b in zip(f.weights[:-1], f.biases[:-1]):
        h = np.maximum(W @ h.T + b[:, None], 0).T
    np.testing.assert_allclose(f(X), (h @ f.weights[-1].T + f.biases[-1])[:, 0], atol=1e-12)


def test_mlp_table2_architecture():
    f = RandomMLP(8)
    assert [W.shape for W in f.weights] == [(64, 8), (64, 64), (1, 64)]


@given(targets(), st.floats(0.1, 5.0))
def test_rescale_sets_the_bound(f, lipschitz):
    if f.lipschitz_bound == 0:
        with pytest.raises(ValueError, match="cannot be rescaled"):
            rescale(f, lipschitz)
        return
    g = rescale(f, lipschitz)
    assert g.lipschitz_bound == pytest.approx(lipschitz)
    X = _points(f.n_inputs, 0, n=50)
    np.testing.assert_allclose(g(X), f(X) * lipschitz / f.lipschitz_bound)


def test_compose_linear_certificate_and_cube_check():
    f = RandomPolynomial(3, 3, seed=1)
    M = np.array([[0.5, 0.2], [-0.3, 0.3], [0.1, -0.6]])
    g = compose_linear(f, M, offset=[0.1, 0.0, -0.2])
    X = UniformCube(2).sample(20, 0)
    np.testing.assert_allclose(g(X), f(X @ M.T + [0.1, 0.0, -0.2]))
    assert g.lipschitz_bound == pytest.approx(np.linalg.norm(M, 2) * f.lipschitz_bound)
    assert estimate_lipschitz(g, UniformCube(2).sample(500, 3)).value <= g.lipschitz_bound
    np.testing.assert_array_equal(target_from_config(g.config())(X), g(X))
    with pytest.raises(ValueError, match="map \\[-1, 1\\]\\^m into"):
        compose_linear(f, 2 * M)
    with pytest.raises(ValueError, match="matrix must have shape"):
        compose_linear(f, np.ones((2, 2)))


def test_hypercube_fast_enough_for_n16():
    """n = 16 on 10^5 points runs as a few BLAS products (timed in the benchmark); here only
    that it gives the same numbers as the slow corner sum on a subset."""
    f = RandomHypercubeFunction(16, seed=0)
    X = UniformCube(16).sample(100_000, 0)
    y = f(X)
    corners = f.corners()
    sub = X[:3]
    direct = np.array([f.corner_values @ np.prod((1 + corners * x) / 2, axis=1) for x in sub])
    np.testing.assert_allclose(y[:3], direct, atol=1e-12)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: RandomPolynomial(0, 2), "n_inputs"),
        (lambda: RandomPolynomial(3, -1), "degree"),
        (lambda: RandomPolynomial(3, 2, lipschitz=0), "lipschitz"),
        (lambda: RandomPolynomial(3, 2, seed=-1), "seed"),
        (lambda: RandomPolynomial(200, 10), "monomials"),
        (lambda: RandomHypercubeFunction(0), "n_inputs"),
        (lambda: RandomHypercubeFunction(25), "n_inputs"),
        (lambda: RandomMLP(0), "n_inputs"),
        (lambda: RandomMLP(3, (4, 0)), "hidden\\[1\\]"),
        (lambda: RandomMLP(3, activation="swish"), "activation"),
        (lambda: RandomMLP(3, lipschitz=-1.0), "lipschitz"),
    ],
)
def test_bad_parameters_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize("f", [RandomPolynomial(3, 2), RandomHypercubeFunction(3), RandomMLP(3)])
def test_bad_input_raises_never_nan(f):
    with pytest.raises(ValueError, match="finite"):
        f(np.array([[0.0, np.nan, 0.0]]))
    with pytest.raises(ValueError, match="finite"):
        f(np.array([[0.0, np.inf, 0.0]]))
    with pytest.raises(ValueError, match="shape"):
        f(np.zeros((4, 2)))
    with pytest.raises(ValueError, match="shape"):
        f(np.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        f.torch(torch.zeros(4, 2))
    with pytest.raises(ValueError, match="finite"):
        f.torch(torch.full((1, 3), float("nan")))
    assert f(np.zeros((0, 3))).shape == (0,)


def test_monomial_features_checks_its_input():
    p = RandomPolynomial(4, 2)
    X = np.random.default_rng(0).uniform(-1, 1, (3, 4))
    np.testing.assert_allclose(p.monomial_features(X) @ p.coefficients, p(X), rtol=1e-12)
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        p.monomial_features(np.ones((3, 5)))
    with pytest.raises(ValueError, match=r"shape \(N, 4\)"):
        p.monomial_features(np.ones(4))


def test_targets_refuse_points_outside_their_domain():
    f = RandomPolynomial(2, 4)
    with pytest.raises(ValueError, match=r"domain \[-1, 1\]\^n.*1e\+100"):
        f(np.array([[1e100, 0.5]]))
    with pytest.raises(ValueError, match=r"domain"):
        f.torch(torch.tensor([[1.5, 0.5]]))
    assert np.isfinite(f(np.array([[1.0, -1.0]]))).all()  # the boundary is inside


def test_estimate_lipschitz_on_huge_points_names_the_domain():
    X = np.array([[1e308, 1e308], [-1e308, 1e308], [0.0, 1.0]])
    with pytest.raises(ValueError, match="domain"):
        estimate_lipschitz(RandomMLP(2, (4,)), X, 1)
