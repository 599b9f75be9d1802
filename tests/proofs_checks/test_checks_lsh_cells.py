"""Exact enumeration of the buckets of a Euclidean LSH on Γ, against routing's per-bucket
linear programs and against sampled points."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proofs_checks.lsh_cells import (
    TooManyCandidates, _unique_rows, difference_body_radius, euclidean_lsh_cells,
    hasher_cells, polytope_vertices,
)
from proofs_checks.strategies import euclidean_lsh_params, subspaces
from routing.bucket_geometry import bucket_diameters, bucket_region_diameter
from routing.euclidean_lsh import EuclideanLSH


def _compare_with_routing(subspace, hasher, n_points=3000, n_exact=12):
    cells = hasher_cells(hasher, subspace.basis)
    X = subspace.sample(n_points, seed=1)
    codes = hasher.hash(X)[:, 0, :]
    lookup = {tuple(c): (d, i) for i, (c, d) in enumerate(zip(cells.codes, cells.diameters))}
    # every bucket a sample point falls in is enumerated
    assert all(tuple(c) in lookup for c in codes)
    ids = hasher.bucket_ids(X)[:, 0]
    sampled = bucket_diameters(X, ids)
    keys = sampled["key"].to_numpy()
    for key, sampled_diam in zip(keys[:n_exact], sampled["diameter"].to_numpy()[:n_exact]):
        code = tuple(hasher.bucket_codes(np.array([key]))[0])
        exact = bucket_region_diameter(hasher, int(key), subspace.basis).diameter
        ours = lookup[code][0]
        assert ours == pytest.approx(exact, rel=1e-7, abs=1e-9)
        assert sampled_diam <= ours + 1e-9  # points of a bucket lie in its region
    return cells


@settings(max_examples=15, deadline=None)
@given(subspaces(st.integers(2, 10), st.integers(1, 2)),
       euclidean_lsh_params(max_hashes=6, max_tables=1).map(
           lambda p: {**p, "width": max(p["width"], 0.3)}))
def test_cells_match_routing_bucket_region_diameter(subspace, params):
    hasher = EuclideanLSH(**{**params, "dim": subspace.dim})
    cells = _compare_with_routing(subspace, hasher)
    assert cells.n_near_degenerate == 0
    assert (cells.n_vertices >= subspace.k + 1).all()
    # no bucket is larger than the difference body allows
    radius = difference_body_radius(hasher.directions[0] @ subspace.basis, hasher.width)
    assert cells.max_diameter <= radius * (1 + 1e-9)


def test_three_dimensional_subspace():
    from lipschitz import UniformSubspace

    subspace = UniformSubspace(6, 3, seed=4)
    _compare_with_routing(subspace, EuclideanLSH(6, 6, 0.8, seed=5), n_exact=6)


def test_k1_cells_are_the_intervals_between_boundaries():
    from lipschitz import UniformSubspace

    s = UniformSubspace(5, 1, seed=0)
    h = EuclideanLSH(5, 3, 0.4, seed=1)
    cells = hasher_cells(h, s.basis)
    lo, hi = polytope_vertices(s.basis)[:, 0]
    g = (h.directions[0] @ s.basis)[:, 0]
    b = h.offsets[0]
    # boundary points z with g_i z + b_i = n w, inside [lo, hi]
    pts = [lo, hi]
    for gi, bi in zip(g, b):
        t = np.sort([(lo * gi + bi) / 0.4, (hi * gi + bi) / 0.4])
        pts += [(n * 0.4 - bi) / gi for n in range(int(np.ceil(t[0])), int(np.floor(t[1])) + 1)]
    pts = np.sort(pts)
    np.testing.assert_allclose(np.sort(cells.diameters), np.sort(np.diff(pts)), atol=1e-12)
    assert cells.diameters.sum() == pytest.approx(hi - lo)


def test_difference_body_radius_matches_brute_force():
    rng = np.random.default_rng(0)
    for k, m in [(1, 3), (2, 2), (2, 5), (3, 4), (4, 6)]:
        G = rng.standard_normal((m, k))
        best = 0.0
        normals = np.vstack([G, -G])
        for rows in itertools.combinations(range(2 * m), k):
            N = normals[list(rows)]
            if abs(np.linalg.det(N)) < 1e-12:
                continue
            u = np.linalg.solve(N, np.ones(k) * 0.7)
            if np.all(np.abs(G @ u) <= 0.7 * (1 + 1e-9)):
                best = max(best, np.linalg.norm(u))
        assert difference_body_radius(G, 0.7) == pytest.approx(best, rel=1e-9)
    assert difference_body_radius(rng.standard_normal((1, 2)), 1.0) == np.inf


def test_unique_rows_equals_numpy():
    rng = np.random.default_rng(1)
    rows = rng.integers(-3, 3, (2000, 5))
    u, inv = _unique_rows(rows)
    u2, inv2 = np.unique(rows, axis=0, return_inverse=True)
    np.testing.assert_array_equal(u, u2)
    np.testing.assert_array_equal(inv, inv2.reshape(-1))


def test_errors():
    from lipschitz import UniformSubspace

    s = UniformSubspace(5, 2, seed=0)
    h = EuclideanLSH(5, 4, 0.1, seed=0)
    with pytest.raises(TooManyCandidates, match="max_candidates"):
        hasher_cells(h, s.basis, max_candidates=10)
    with pytest.raises(ValueError, match="k"):
        euclidean_lsh_cells(np.ones((2, 5)), np.zeros(2), 1.0, np.eye(5)[:, :4])
    with pytest.raises(ValueError, match="orthonormal"):
        euclidean_lsh_cells(np.ones((2, 5)), np.zeros(2), 1.0, 2 * np.eye(5)[:, :2])
    with pytest.raises(ValueError, match="width"):
        euclidean_lsh_cells(np.ones((2, 5)), np.zeros(2), 0.0, np.eye(5)[:, :2])
    with pytest.raises(ValueError, match="offsets"):
        euclidean_lsh_cells(np.ones((2, 5)), np.zeros(3), 1.0, np.eye(5)[:, :2])
