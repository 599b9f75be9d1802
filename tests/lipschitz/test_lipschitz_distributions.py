"""Input distributions: support, exact uniformity, acceptance rate, determinism."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from lipschitz import CurvedManifold, UniformCube, UniformSubspace, distribution_from_config


@st.composite
def subspaces(draw):
    dim = draw(st.integers(1, 40))
    k = draw(st.integers(1, min(dim, 8)))
    return UniformSubspace(dim, k, seed=draw(st.integers(0, 10**6)))


@given(subspaces(), st.integers(0, 1000))
def test_subspace_samples_in_cube_and_span(dist, seed):
    X = dist.sample(300, seed)
    assert X.shape == (300, dist.dim)
    assert np.abs(X).max() <= 1.0
    np.testing.assert_allclose(dist.basis.T @ dist.basis, np.eye(dist.k), atol=1e-12)
    residual = X - (X @ dist.basis) @ dist.basis.T
    assert np.abs(residual).max() <= 1e-9
    np.testing.assert_array_equal(dist.sample(300, seed), X)
    np.testing.assert_array_equal(distribution_from_config(dist.config()).sample(300, seed), X)


def test_subspace_large_dim():
    dist = UniformSubspace(1024, 8, seed=3)
    X = dist.sample(2000, 1)
    assert np.abs(X).max() <= 1.0
    assert np.abs(X - X @ dist.basis @ dist.basis.T).max() <= 1e-9
    assert dist.acceptance_rate > 0.01  # documented: the max-determinant frame keeps it usable


def test_subspace_k1_is_uniform_on_its_interval():
    """k = 1: the coordinate along the basis vector is uniform on [−t, t], t = 1/max|b_j|."""
    dist = UniformSubspace(12, 1, seed=7)
    t = 1.0 / np.abs(dist.basis[:, 0]).max()
    z = dist.sample_coordinates(4000, seed=11)[:, 0]
    assert np.abs(z).max() <= t
    result = stats.kstest(z, stats.uniform(loc=-t, scale=2 * t).cdf)
    assert result.pvalue > 0.01
    # and it is not uniform on a wrong interval (the test has power)
    assert stats.kstest(z, stats.uniform(loc=-0.9 * t, scale=1.8 * t).cdf).pvalue < 0.01
    assert dist.acceptance_rate == 1.0


@pytest.mark.parametrize("dim, k, seed", [(5, 2, 0), (30, 2, 1), (7, 3, 2), (40, 4, 3)])
def test_subspace_acceptance_rate_matches_volume_ratio(dim, k, seed):
    dist = UniformSubspace(dim, k, seed=seed)
    dist.sample(20_000, seed=5)
    expected = dist.expected_acceptance_rate
    accepted, drawn = dist._n_accepted, dist._n_drawn
    ci = stats.binomtest(accepted, drawn).proportion_ci(0.999)
    assert ci.low <= expected <= ci.high


@pytest.mark.parametrize("dim, k", [(12, 1), (30, 3), (40, 6)])
def test_subspace_points_and_counts_do_not_depend_on_the_batches(dim, k, monkeypatch):
    """The candidates are one stream of the sampling seed, so the batch sizes that
    ``_batch_for`` picks (from the measured acceptance rate) change neither the points nor
    the drawn and accepted counts: batches of 65,536 (the fixed size it replaced) and of 7
    (many batches per call, most ending mid-way) give the same as the default."""
    def run(batch):
        dist = UniformSubspace(dim, k, seed=4)
        if batch is not None:
            monkeypatch.setattr(dist, "_batch_for", lambda needed: batch)
        points = [dist.sample(n, seed) for n, seed in ((1, 0), (700, 1), (5000, 2), (0, 3),
                                                        (3000, 4))]
        return points, (dist._n_drawn, dist._n_accepted)

    default_points, default_counts = run(None)
    for batch in (1 << 16, 7):
        points, counts = run(batch)
        assert counts == default_counts
        for a, b in zip(points, default_points):
            np.testing.assert_array_equal(a, b)


@given(n=st.integers(0, 300), dim=st.integers(1, 40), k=st.integers(1, 8),
       seed=st.integers(0, 2**31), scale=st.floats(0.1, 3.0))
def test_subspace_rejection_kernel_keeps_the_points_inside(n, dim, k, seed, scale):
    """``_inside`` keeps exactly the candidates with |rows · z| ≤ 1 for every row (numpy's
    products as the reference), in order, and drops NaN candidates."""
    from lipschitz.subspace import _inside

    rng = np.random.default_rng(seed)
    z = rng.uniform(-scale, scale, (n, k))
    if n:
        z[rng.integers(n)] = np.nan
    rows = rng.standard_normal((dim, k)) / np.sqrt(k)
    out = np.empty(n, np.int64)
    got = out[:_inside(z, rows, out)]
    with np.errstate(invalid="ignore"):
        expected = np.flatnonzero((np.abs(z @ rows.T) <= 1.0).all(axis=1))
    np.testing.assert_array_equal(got, expected)


def test_subspace_batches_follow_the_measured_acceptance_rate():
    dist = UniformSubspace(40, 4, seed=4)
    assert dist._batch_for(4096) == 1 << 16  # no rate measured yet: the cautious 5 %
    dist.sample(20_000, seed=0)
    rate = dist.acceptance_rate
    assert 0.05 < rate < 0.8
    assert dist._batch_for(4096) == int(np.ceil(1.25 * 4096 / rate))
    assert dist._batch_for(1) == 1024  # the smallest batch


def test_subspace_uniform_in_two_dimensions():
    """k = 2: the fraction of samples in a half-plane equals its area fraction of P."""
    from scipy.spatial import ConvexHull, HalfspaceIntersection

    dist = UniformSubspace(6, 2, seed=4)
    z = dist.sample_coordinates(20_000, seed=2)
    halfspaces = np.vstack([np.hstack([dist.basis, -np.ones((6, 1))]),
                            np.hstack([-dist.basis, -np.ones((6, 1))])])
    cut = np.array([[1.0, 0.0, -0.3]])  # z_0 <= 0.3
    whole = ConvexHull(HalfspaceIntersection(halfspaces, np.zeros(2)).intersections).volume
    part = ConvexHull(HalfspaceIntersection(np.vstack([halfspaces, cut]),
                                            np.zeros(2)).intersections).volume
    assert stats.binomtest(int((z[:, 0] <= 0.3).sum()), len(z), part / whole).pvalue > 1e-3


def test_cube_uniform_and_seeded():
    X = UniformCube(3).sample(5000, 1)
    assert stats.kstest(X[:, 2], stats.uniform(loc=-1, scale=2).cdf).pvalue > 0.01
    np.testing.assert_array_equal(UniformCube(3).sample(5000, 1), X)


@given(st.integers(2, 30), st.floats(0.0, 20.0), st.integers(0, 1000))
def test_manifold_inside_cube_isometric_and_curved_as_documented(dim, curvature, seed):
    k = max(1, min(3, dim // 2))
    m = CurvedManifold(dim, k, curvature, seed=seed)
    X = m.sample(500, seed)
    assert np.abs(X).max() <= 1.0
    assert m.coordinate_extent(m.half_width) <= 1.0 + 1e-12
    # isometric embedding: Jacobian columns orthonormal (central differences)
    z = np.random.default_rng(seed).uniform(-m.half_width, m.half_width, k) * 0.9
    h = 1e-5 * max(m.half_width, 1e-3)
    J = np.stack([(m.embed((z + h * e)[None]) - m.embed((z - h * e)[None]))[0] / (2 * h)
                  for e in np.eye(k)], axis=1)
    np.testing.assert_allclose(J.T @ J, np.eye(k), atol=1e-5)
    # curvature of each coordinate curve = κ: ‖φ''‖ for a unit-speed curve
    h2 = 1e-3 * max(m.half_width, 1e-2)
    e = np.eye(k)[0]
    second = (m.embed((z + h2 * e)[None]) - 2 * m.embed(z[None]) + m.embed((z - h2 * e)[None]))
    assert np.linalg.norm(second) / h2**2 == pytest.approx(curvature, abs=1e-3 * (1 + curvature))


def test_manifold_half_width_is_the_largest_that_fits():
    m = CurvedManifold(10, 2, 2.0, seed=1)
    if m.half_width < np.pi / 4:  # limited by the cube, not by the arc angle
        assert m.coordinate_extent(m.half_width * 1.001) > 1.0


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: UniformCube(0), "dim"),
        (lambda: UniformSubspace(3, 4), "k"),
        (lambda: UniformSubspace(3, 0), "k"),
        (lambda: UniformSubspace(20, 9), "k"),
        (lambda: UniformSubspace(0, 1), "dim"),
        (lambda: UniformSubspace(5, 2).sample(-1), "n"),
        (lambda: CurvedManifold(4, 3, 1.0), "k"),
        (lambda: CurvedManifold(4, 2, -1.0), "curvature"),
        (lambda: CurvedManifold(1, 1, 1.0), "dim >= 2"),
        (lambda: distribution_from_config({"family": "Sphere"}), "family"),
    ],
)
def test_bad_parameters_raise(make, match):
    with pytest.raises(ValueError, match=match):
        make()
