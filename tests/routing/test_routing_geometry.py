"""Bucket geometry (Baykal et al. 2022, Lemma 4.2): counting non-empty buckets, bucket sizes,
Chao1, diameters of sampled buckets and exact diameters of bucket regions inside Γ."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog
from scipy.spatial import ConvexHull
from scipy.spatial.distance import pdist

from routing.bucket_geometry import (
    _bucket_diameters_reference,
    _count_distinct_columns,
    _count_distinct_reference,
    bucket_diameters,
    bucket_region_diameter,
    bucket_size_histogram,
    estimate_nonempty_buckets,
    n_nonempty_buckets,
)
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH

INT64 = np.iinfo(np.int64)


# ------------------------------------------------------------------ counting and sizes
key_arrays = st.one_of(
    st.lists(st.integers(0, 50), max_size=300),  # dense, bitmap path
    st.lists(st.integers(-(10**6), 10**6), max_size=300),
    st.lists(st.integers(INT64.min, INT64.max), max_size=300),  # wide, sort path, extremes
    st.lists(st.sampled_from([INT64.min, INT64.max, 0, -1, 1]), max_size=50),
)


@given(keys=key_arrays, n_tables=st.integers(1, 3), seed=st.integers(0, 1000))
def test_n_nonempty_buckets_matches_sort_and_count(keys, n_tables, seed):
    base = np.array(keys, dtype=np.int64)
    rng = np.random.default_rng(seed)
    ids = np.stack([rng.permutation(base) for _ in range(n_tables)], axis=1)
    ids[:, -1] = rng.choice(base, len(base)) if len(base) else ids[:, -1]  # a column with repeats
    expected = np.array([len(set(ids[:, t].tolist())) for t in range(n_tables)])
    np.testing.assert_array_equal(n_nonempty_buckets(ids), expected)
    np.testing.assert_array_equal(_count_distinct_reference(ids), expected)
    kernel = _count_distinct_columns(np.ascontiguousarray(ids))  # -1: range too wide for the bitmap
    np.testing.assert_array_equal(kernel[kernel >= 0], expected[kernel >= 0])
    assert n_nonempty_buckets(ids[:, 0]) == expected[0]
    assert isinstance(n_nonempty_buckets(ids[:, 0]), int)


def test_n_nonempty_buckets_large_dense_and_wide():
    rng = np.random.default_rng(0)
    dense = rng.integers(0, 1 << 16, 200_000)
    wide = rng.integers(INT64.min, INT64.max, 50_000, dtype=np.int64)[rng.integers(0, 50_000, 200_000)]
    for keys in (dense, wide, dense.astype(np.uint16), wide.view(np.uint64)):
        assert n_nonempty_buckets(keys) == len(np.unique(keys))


@given(keys=key_arrays)
def test_bucket_size_histogram_counts_bucket_sizes(keys):
    ids = np.array(keys, dtype=np.int64)
    hist = bucket_size_histogram(ids)
    _, counts = np.unique(ids, return_counts=True)
    expected = np.bincount(counts, minlength=1) if len(counts) else np.zeros(1, np.int64)
    np.testing.assert_array_equal(hist, expected)
    assert hist[0] == 0
    assert (hist * np.arange(len(hist))).sum() == len(ids)


def test_bucket_size_histogram_two_tables_padded():
    ids = np.array([[0, 5], [0, 5], [0, 6], [1, 5]])
    np.testing.assert_array_equal(bucket_size_histogram(ids), [[0, 1, 0, 1], [0, 1, 0, 1]])
    ids = np.array([[0, 5], [0, 6], [2, 7]])
    np.testing.assert_array_equal(bucket_size_histogram(ids), [[0, 1, 1], [0, 3, 0]])


def test_bad_ids_raise():
    for bad, msg in [(np.zeros((2, 2, 2), int), "shape"), (np.array([0.5, 1.0]), "integer"), (np.array([True]), "integer")]:
        with pytest.raises(ValueError, match=msg):
            n_nonempty_buckets(bad)
        with pytest.raises(ValueError, match=msg):
            bucket_size_histogram(bad)
        with pytest.raises(ValueError, match=msg):
            estimate_nonempty_buckets(bad)


# ------------------------------------------------------------------ Chao1
def test_chao1_hand_computed_example():
    # bucket sizes 1, 1, 1, 2, 2, 3, 5: n = 15, S_obs = 7, f1 = 3, f2 = 2
    ids = np.repeat(np.arange(7), [1, 1, 1, 2, 2, 3, 5])
    est = estimate_nonempty_buckets(np.random.default_rng(0).permutation(ids))
    assert (est.n_samples, est.n_observed, est.f1, est.f2) == (15, 7, 3, 2)
    K = 14 / 15
    assert est.chao1 == pytest.approx(7 + K * 3 * 2 / (2 * 3))  # 7.9333...
    var = K * 3 * 2 / (2 * 3) + K**2 * 3 * 25 / (4 * 9) + K**2 * 9 * 2 * 4 / (4 * 81)
    assert est.std == pytest.approx(math.sqrt(var))
    T = K  # chao1 - S_obs
    C = math.exp(1.959963984540054 * math.sqrt(math.log(1 + var / T**2)))
    assert (est.ci_low, est.ci_high) == pytest.approx((7 + T / C, 7 + T * C))
    assert est.unseen == pytest.approx(K)


def test_chao1_without_doubletons_and_without_singletons():
    # sizes 1, 1, 1, 1, 3: f1 = 4, f2 = 0 -> S = 5 + (6/7) * 4 * 3 / 2
    est = estimate_nonempty_buckets(np.repeat(np.arange(5), [1, 1, 1, 1, 3]))
    assert est.chao1 == pytest.approx(5 + 6 / 7 * 6)
    assert est.ci_low > 5
    # f1 = 0: nothing unseen, interval starts at S_obs
    est = estimate_nonempty_buckets(np.repeat(np.arange(4), [2, 3, 2, 5]))
    assert est.chao1 == 4 and est.unseen == 0 and est.ci_low == 4 and est.ci_high >= 4


def test_chao1_nearly_unbiased_on_a_uniform_population():
    S, n, reps = 2000, 2000, 200
    rng = np.random.default_rng(1)
    est = estimate_nonempty_buckets(rng.integers(0, S, (n, reps)))
    chao = np.array([e.chao1 for e in est])
    observed = np.array([e.n_observed for e in est])
    assert abs(chao.mean() / S - 1) < 0.02  # nearly unbiased ...
    assert observed.mean() / S < 0.7  # ... where the observed count is far too low (1 - e^-1)
    covered = np.mean([e.ci_low <= S <= e.ci_high for e in est])
    assert covered > 0.85


# ------------------------------------------------------------------ diameters of samples
@given(
    n=st.integers(1, 120),
    dim=st.integers(1, 4),
    n_keys=st.integers(1, 10),
    n_tables=st.integers(1, 2),
    seed=st.integers(0, 2**31 - 1),
)
def test_bucket_diameters_match_pdist(n, dim, n_keys, n_tables, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, dim))
    ids = rng.integers(-3, n_keys, (n, n_tables)) * 1000
    df = bucket_diameters(X, ids)
    assert list(df.columns) == ["table", "key", "count", "diameter", "centroid_bound"]
    for t in range(n_tables):
        part = df[df.table == t]
        np.testing.assert_array_equal(part.key.to_numpy(), np.unique(ids[:, t]))
        for key, count, diam, bound in zip(part.key, part["count"], part.diameter, part.centroid_bound):
            pts = X[ids[:, t] == key]
            assert count == len(pts)
            exact = pdist(pts).max() if len(pts) > 1 else 0.0
            assert diam == pytest.approx(exact, rel=1e-12, abs=1e-12)
            assert bound >= diam * (1 - 1e-12)


def test_bucket_diameter_kernel_matches_reference_and_handles_big_buckets():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (3000, 5))
    ids = rng.integers(0, 3, 3000)  # ~1000 points per bucket
    df = bucket_diameters(X, ids)
    order = np.argsort(ids, kind="stable")
    starts = np.r_[0, np.cumsum(np.bincount(ids))]
    np.testing.assert_allclose(df.diameter, _bucket_diameters_reference(X[order], starts), rtol=1e-12)


def test_empty_input():
    assert n_nonempty_buckets(np.zeros(0, np.int64)) == 0
    np.testing.assert_array_equal(n_nonempty_buckets(np.zeros((0, 3), np.int64)), [0, 0, 0])
    assert len(bucket_diameters(np.zeros((0, 2)), np.zeros(0, np.int64))) == 0
    est = estimate_nonempty_buckets(np.zeros(0, np.int64))
    assert est.n_samples == 0 and est.chao1 == 0


def test_bucket_diameters_bad_input():
    with pytest.raises(ValueError, match="one row per point"):
        bucket_diameters(np.zeros((3, 2)), np.zeros(4, int))
    with pytest.raises(ValueError, match="X must be finite"):
        bucket_diameters(np.full((3, 2), np.nan), np.zeros(3, int))


# ------------------------------------------------------------------ exact region diameters
def _random_basis(dim, k, rng):
    return np.linalg.qr(rng.standard_normal((dim, k)))[0]


def _gamma_box(basis):
    """Bounding box of Γ in subspace coordinates: min and max of each z_j over |basis z| <= 1."""
    dim, k = basis.shape
    A = np.vstack([basis, -basis])
    lo, hi = np.empty(k), np.empty(k)
    for j in range(k):
        c = np.eye(k)[j]
        lo[j] = linprog(c, A_ub=A, b_ub=np.ones(2 * dim), bounds=[(None, None)] * k).fun
        hi[j] = -linprog(-c, A_ub=A, b_ub=np.ones(2 * dim), bounds=[(None, None)] * k).fun
    return lo, hi


def _sample_region(hasher, basis, n, rng):
    """Points of Γ = span(basis) ∩ [-1, 1]^dim, uniform in subspace coordinates."""
    lo, hi = _gamma_box(basis)
    z = rng.uniform(lo, hi, (n, basis.shape[1]))
    x = z @ basis.T
    inside = np.abs(x).max(axis=1) <= 1
    return z[inside], x[inside]


def _sampled_diameter(z):
    if len(z) < 2:
        return 0.0
    if z.shape[1] == 1:
        return float(z.max() - z.min())
    if len(z) > z.shape[1] + 1:
        try:
            z = z[ConvexHull(z).vertices]
        except Exception:  # degenerate sample: fall back to all pairs
            pass
    return float(pdist(z).max())


def _refine(z_in, member, rng, rounds=20, n=1000, starts=6):
    """Brute-force diameter: climb from the farthest sampled pairs using only membership tests.

    Starting from a few far-apart pairs of sampled points (hull vertices), repeatedly sample
    boxes around both ends and move each end to the member farthest from the other end. Every
    point kept is a member, so the result is a lower bound on the true diameter.
    """
    if len(z_in) < 2:
        return 0.0, z_in[0], z_in[0]
    if z_in.shape[1] == 1:
        z_in = z_in[[np.argmin(z_in[:, 0]), np.argmax(z_in[:, 0])]]
    elif len(z_in) > z_in.shape[1] + 1:
        try:
            z_in = z_in[ConvexHull(z_in).vertices]
        except Exception:  # degenerate sample
            z_in = z_in[:500]
    d = np.sqrt(((z_in[:, None] - z_in[None]) ** 2).sum(-1))
    best, used = (0.0, z_in[0], z_in[0]), []
    for flat in np.argsort(-d, axis=None):
        if len(used) == starts:
            break
        i, j = np.unravel_index(flat, d.shape)
        # distinct starts: in a thin cell the two diagonals' ends lie close together, and the
        # climb from one never reaches the other (seen: a 2-D sliver whose diagonals differ by
        # 0.13 %, every start on the shorter one under a 0.2·d closeness rule)
        close = [np.linalg.norm(z_in[i] - a) + np.linalg.norm(z_in[j] - b) < 0.02 * d[i, j] for a, b in used]
        if i > j or any(close):
            continue
        used.append((z_in[i], z_in[j]))
        p, q = z_in[i], z_in[j]
        radius = 0.1 * d[i, j]
        for _ in range(rounds):
            cand_p = np.vstack([p, p + rng.uniform(-radius, radius, (n, len(p)))])
            cand_q = np.vstack([q, q + rng.uniform(-radius, radius, (n, len(q)))])
            cand_p, cand_q = cand_p[member(cand_p)], cand_q[member(cand_q)]
            p = cand_p[np.argmax(np.linalg.norm(cand_p - q, axis=1))]
            q = cand_q[np.argmax(np.linalg.norm(cand_q - p, axis=1))]
            radius *= 0.7
        if np.linalg.norm(p - q) > best[0]:
            best = (float(np.linalg.norm(p - q)), p, q)
    return best


def _formula_member(hasher, basis, key):
    """Membership in Γ ∩ bucket from the hash formula itself (fast, no thread pool)."""
    if hasattr(hasher, "offsets"):
        code = hasher.bucket_codes(np.array([key]))[0]

        def in_bucket(x):
            h = np.floor((x @ hasher.directions[0].T + hasher.offsets[0]) / hasher.width)
            return (h == code).all(axis=1)
    else:
        bits = (int(np.int64(key).view(np.uint64)) >> np.arange(hasher.n_bits)) & 1

        def in_bucket(x):
            return ((x @ hasher.directions[0].T >= 0) == bits).all(axis=1)

    def member(z):
        x = z @ basis.T
        return (np.abs(x).max(axis=1) <= 1) & in_bucket(x)

    return member


def _check_region_against_samples(hasher, basis, rng, n_samples, rel_tol, n_keys=2):
    z, x = _sample_region(hasher, basis, n_samples, rng)
    keys = hasher.bucket_ids(x)[:, 0]
    uniq, counts = np.unique(keys, return_counts=True)
    for key in uniq[np.argsort(-counts)[:n_keys]]:  # the best-sampled buckets
        region = bucket_region_diameter(hasher, int(key), basis)
        member = _formula_member(hasher, basis, int(key))
        assert member(z[keys == key]).all()  # the formula agrees with the hasher ...
        sampled, p, q = _refine(z[keys == key], member, rng)
        ends = np.array([p, q]) @ basis.T
        assert (hasher.bucket_ids(ends)[:, 0] == key).all()  # ... and so do the climbed ends
        assert not region.is_empty
        assert region.dimension == basis.shape[1]
        assert region.diameter >= sampled - 1e-9  # never smaller than what the samples show
        # close to it; the climb converges slowly into thin spikes of 3-D cells (gaps up to ~4%
        # seen for hyperplane cones), so the tolerance grows with k; what pins the value from
        # above exactly is the vertex check below (vertices in the region => diameter <= true)
        assert region.diameter <= sampled * (1 + rel_tol) + 1e-9, (region.diameter, sampled)
        # every vertex is in the closure: nudged towards the centre it hashes to the bucket
        centre = region.vertices.mean(axis=0)
        nudged = region.vertices + 1e-7 * (centre - region.vertices)
        assert (hasher.bucket_ids(nudged)[:, 0] == key).all()
        assert np.abs(region.vertices).max() <= 1 + 1e-9


@settings(max_examples=25)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 3), extra=st.integers(0, 2))
def test_euclidean_region_diameter_matches_brute_force(seed, k, extra):
    rng = np.random.default_rng(seed)
    dim = k + extra
    hasher = EuclideanLSH(dim, n_hashes=2, width=1.5, seed=seed)
    basis = _random_basis(dim, k, rng)
    _check_region_against_samples(hasher, basis, rng, n_samples=20_000, rel_tol=[1e-5, 1e-3, 0.06][k - 1])


@settings(max_examples=25)
@given(seed=st.integers(0, 10_000), k=st.integers(1, 3), extra=st.integers(0, 2))
def test_hyperplane_region_diameter_matches_brute_force(seed, k, extra):
    rng = np.random.default_rng(seed)
    dim = k + extra
    hasher = HyperplaneLSH(dim, n_bits=3, seed=seed)
    basis = _random_basis(dim, k, rng)
    _check_region_against_samples(hasher, basis, rng, n_samples=20_000, rel_tol=[1e-5, 1e-3, 0.06][k - 1])


def test_region_diameter_k4():
    rng = np.random.default_rng(3)
    hasher = EuclideanLSH(5, n_hashes=3, width=2.0, seed=3)
    basis = _random_basis(5, 4, rng)
    _check_region_against_samples(hasher, basis, rng, n_samples=50_000, rel_tol=5e-3)


def test_whole_cube_region_has_the_cube_diagonal():
    # one hash with a huge width: the bucket is everything, the region is Γ itself
    hasher = EuclideanLSH(3, n_hashes=1, width=1e6, seed=0)
    key = int(hasher.bucket_ids(np.zeros((1, 3)))[0, 0])
    region = bucket_region_diameter(hasher, key, np.eye(3))
    assert region.diameter == pytest.approx(2 * math.sqrt(3))
    assert len(np.unique(np.round(region.vertices, 9), axis=0)) == 8
    # axis-aligned plane in 3-D: the cube rows of the third axis are 0 <= 1 (dropped)
    region = bucket_region_diameter(hasher, key, np.eye(3)[:, :2])
    assert region.diameter == pytest.approx(2 * math.sqrt(2)) and region.dimension == 2


def test_region_that_misses_the_cube_is_empty():
    hasher = EuclideanLSH(2, n_hashes=4, width=0.25, seed=1)
    key = int(hasher.bucket_ids(np.array([[5.0, 5.0]]))[0, 0])  # a cell far outside the cube
    region = bucket_region_diameter(hasher, key, np.eye(2))
    assert region.is_empty and region.diameter == 0.0 and region.dimension == -1
    region = bucket_region_diameter(hasher, key, np.eye(2)[:, :1])
    assert region.is_empty


def test_unrealised_sign_patterns_are_lower_dimensional():
    # 6 hyperplanes through 0 cut a plane into 12 sectors; the other 52 patterns only meet it at 0
    rng = np.random.default_rng(0)
    hasher = HyperplaneLSH(3, n_bits=6, seed=0)
    basis = _random_basis(3, 2, rng)
    angles = np.linspace(0, 2 * np.pi, 20_000, endpoint=False)
    circle = 0.5 * np.c_[np.cos(angles), np.sin(angles)] @ basis.T
    realised = set(hasher.bucket_ids(circle)[:, 0].tolist())
    assert len(realised) == 12
    for key in range(64):
        region = bucket_region_diameter(hasher, key, basis)
        assert not region.is_empty  # the closure of every sign pattern contains 0
        if key in realised:
            assert region.dimension == 2 and region.diameter > 0.1
        else:
            assert region.dimension == 0 and region.diameter == 0.0
            np.testing.assert_allclose(region.vertices, 0, atol=1e-8)


def test_region_diameter_bad_input():
    hasher = EuclideanLSH(6, n_hashes=2, width=1.0, seed=0)
    key = int(hasher.bucket_ids(np.zeros((1, 6)))[0, 0])
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"k = basis.shape\[1\] must be an integer in \[1, 4\].*k=5"):
        bucket_region_diameter(hasher, key, _random_basis(6, 5, rng))
    with pytest.raises(ValueError, match="orthonormal"):
        bucket_region_diameter(hasher, key, 2 * _random_basis(6, 2, rng))
    with pytest.raises(ValueError, match=r"basis must have shape \(dim=6, k\)"):
        bucket_region_diameter(hasher, key, _random_basis(5, 2, rng))
    with pytest.raises(ValueError, match=r"table must be an integer in \[0, 0\]"):
        bucket_region_diameter(hasher, key, _random_basis(6, 2, rng), table=1)
    with pytest.raises(ValueError, match="key must be an integer"):
        bucket_region_diameter(hasher, 1.5, _random_basis(6, 2, rng))

    class Other:
        dim, n_tables = 6, 1

    with pytest.raises(ValueError, match="EuclideanLSH or a HyperplaneLSH"):
        bucket_region_diameter(Other(), 0, _random_basis(6, 2, rng))
