"""LSHTable (Baykal et al. 2022, §2.2): bucket means / least-squares polynomials, averaged over
tables; partial_fit; bucket inspection; the empty-bucket policy; bad input."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH
from routing.lsh_table import (
    LSHTable,
    NotFittedError,
    _accumulate,
    _accumulate_reference,
    polynomial_powers,
)


def _data(n, dim, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, dim))
    y = np.sin(3 * X[:, 0]) + X.sum(axis=1) ** 2 + 0.1 * rng.standard_normal(n)
    return X, y


def _code_groups(hasher, X, t):
    """Independent bucket labels: the tuple of integer codes h_1..h_m of table t."""
    return [tuple(row) for row in hasher.hash(X)[:, t, :]]


def test_degree0_equals_groupby_means_and_average_over_tables():
    X, y = _data(3000, 3)
    h = EuclideanLSH(3, n_hashes=3, width=0.8, n_tables=4, seed=1)
    model = LSHTable(h).fit(X, y)
    Xq = np.random.default_rng(5).uniform(-1, 1, (500, 3))
    expected = np.zeros(len(Xq))
    for t in range(h.n_tables):
        codes = pd.DataFrame(h.hash(X)[:, t, :]).assign(y=y)
        means = codes.groupby(list(range(h.n_hashes)))["y"].mean().to_dict()  # code tuple -> mean
        per_table = np.array([means.get(c, y.mean()) for c in _code_groups(h, Xq, t)])
        expected += per_table / h.n_tables
    np.testing.assert_allclose(model.predict(Xq), expected, rtol=1e-12, atol=1e-12)


def test_single_table_prediction_is_the_bucket_mean_of_training_points():
    X, y = _data(2000, 2)
    h = HyperplaneLSH(2, n_bits=5, n_tables=1, seed=3)
    model = LSHTable(h).fit(X, y)
    keys = h.bucket_ids(X)[:, 0]
    means = pd.Series(y).groupby(keys).mean()
    np.testing.assert_allclose(model.predict(X), means.loc[keys].to_numpy(), rtol=1e-12)
    b = model.buckets_
    np.testing.assert_allclose(b["value"].to_numpy(), means.sort_index().to_numpy(), rtol=1e-12)


def _independent_features(X, degree):
    cols = []
    for deg in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(X.shape[1]), deg):
            cols.append(np.prod(X[:, list(combo)], axis=1) if combo else np.ones(len(X)))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("degree,n,width", [(1, 600, 0.7), (2, 400, 0.9), (2, 60, 0.6)])
def test_degree_delta_equals_numpy_lstsq_per_bucket(degree, n, width):
    # n = 60 leaves many buckets with fewer points than features: minimum-norm solutions
    X, y = _data(n, 2, seed=degree)
    h = EuclideanLSH(2, n_hashes=2, width=width, n_tables=2, seed=7)
    model = LSHTable(h, degree=degree).fit(X, y)
    Xq = np.random.default_rng(11).uniform(-1, 1, (300, 2))
    Phi, Phiq = _independent_features(X, degree), _independent_features(Xq, degree)
    expected = np.zeros(len(Xq))
    for t in range(h.n_tables):
        groups = np.array(_code_groups(h, X, t))
        qgroups = np.array(_code_groups(h, Xq, t))
        for i, q in enumerate(qgroups):
            rows = np.all(groups == q, axis=1)
            if rows.any():
                coef = np.linalg.lstsq(Phi[rows], y[rows], rcond=None)[0]
                expected[i] += Phiq[i] @ coef / h.n_tables
            else:
                expected[i] += y.mean() / h.n_tables
    np.testing.assert_allclose(model.predict(Xq), expected, rtol=1e-7, atol=1e-7)


def test_ridge_solves_the_regularised_normal_equations():
    X, y = _data(200, 2)
    h = EuclideanLSH(2, n_hashes=1, width=100.0, n_tables=1, seed=0)  # one big bucket
    model = LSHTable(h, degree=2, ridge=0.5).fit(X, y)
    Phi = _independent_features(X, 2)
    coef = np.linalg.solve(Phi.T @ Phi + 0.5 * np.eye(Phi.shape[1]), Phi.T @ y)
    np.testing.assert_allclose(model.predict(X[:20]), Phi[:20] @ coef, rtol=1e-9)
    np.testing.assert_allclose(model.bucket_values(0)[1][0], coef, rtol=1e-9)


@settings(max_examples=15)
@given(
    cuts=st.lists(st.integers(1, 499), min_size=1, max_size=4, unique=True),
    degree=st.integers(0, 2),
)
def test_partial_fit_in_chunks_equals_fit_on_all_data(cuts, degree):
    X, y = _data(500, 2, seed=3)
    h = EuclideanLSH(2, n_hashes=2, width=0.5, n_tables=3, seed=2)
    full = LSHTable(h, degree=degree).fit(X, y)
    bounds = [0] + sorted(cuts) + [len(X)]
    chunked = LSHTable(h, degree=degree)
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        chunked.partial_fit(X[lo:hi], y[lo:hi])
    Xq = np.random.default_rng(1).uniform(-1.2, 1.2, (200, 2))
    np.testing.assert_allclose(chunked.predict(Xq), full.predict(Xq), rtol=1e-10, atol=1e-12)
    pd.testing.assert_frame_equal(chunked.buckets_, full.buckets_, rtol=1e-12)
    assert chunked.n_samples_seen_ == full.n_samples_seen_ == 500
    key = int(full.buckets_.key.iloc[0])
    np.testing.assert_array_equal(chunked.bucket_members(key, 1), full.bucket_members(key, 1))


def test_bucket_counts_and_members_follow_insertion_order():
    X, y = _data(900, 3, seed=4)
    h = HyperplaneLSH(3, n_bits=4, n_tables=2, seed=4)
    model = LSHTable(h).fit(X[:400], y[:400]).partial_fit(X[400:], y[400:])
    ids = h.bucket_ids(X)
    b = model.buckets_
    for t in range(2):
        keys, counts = np.unique(ids[:, t], return_counts=True)
        bt = b[b.table == t]
        np.testing.assert_array_equal(bt.key.to_numpy(), keys)
        np.testing.assert_array_equal(bt["count"].to_numpy(), counts)
        for key in keys:
            np.testing.assert_array_equal(model.bucket_members(int(key), t), np.flatnonzero(ids[:, t] == key))
    assert model.bucket_members(1 << 20, 0).shape == (0,)  # 4-bit keys never reach 2^20


def test_empty_bucket_policy_falls_back_to_the_global_mean_and_is_reported():
    X, y = _data(1000, 2, seed=6)
    h = EuclideanLSH(2, n_hashes=2, width=0.5, n_tables=3, seed=6)
    model = LSHTable(h, degree=1).fit(X, y)
    assert np.isnan(model.empty_query_fraction_).all()
    rng = np.random.default_rng(0)
    # near the data, far away (unseen in every table), and at the edge (unseen in some tables)
    Xq = np.vstack([rng.uniform(-1, 1, (100, 2)), rng.uniform(4, 6, (50, 2)), rng.uniform(1, 1.6, (100, 2))])
    pred, empty = model.predict(Xq, return_empty=True)
    train_keys = h.bucket_ids(X)
    query_keys = h.bucket_ids(Xq)
    expected_empty = np.stack([~np.isin(query_keys[:, t], train_keys[:, t]) for t in range(3)], axis=1)
    np.testing.assert_array_equal(empty, expected_empty)
    assert empty[100:150].all()
    np.testing.assert_allclose(pred[100:150], y.mean(), rtol=1e-12)
    np.testing.assert_array_equal(model.n_empty_queries_, expected_empty.sum(axis=0))
    np.testing.assert_array_equal(model.n_queries_, [250, 250, 250])
    model.predict(Xq[:10])
    np.testing.assert_allclose(model.empty_query_fraction_, model.n_empty_queries_ / 260)
    # every query averages, per table, its bucket's polynomial or (empty bucket) the global mean
    phi = np.c_[np.ones(len(Xq)), Xq]
    expected = np.zeros(len(Xq))
    for t in range(3):
        keys, coef = model.bucket_values(t)
        pos = np.clip(np.searchsorted(keys, query_keys[:, t]), 0, len(keys) - 1)
        expected += np.where(empty[:, t], y.mean(), np.einsum("np,np->n", phi, coef[pos])) / 3
    np.testing.assert_allclose(pred, expected, rtol=1e-10)
    assert (empty.any(axis=1) & ~empty.all(axis=1)).any()  # some queries mix both
    # refitting resets the counters
    model.fit(X, y)
    np.testing.assert_array_equal(model.n_queries_, 0)


def test_same_seed_same_numbers():
    X, y = _data(500, 3)
    a = LSHTable(EuclideanLSH(3, 3, 0.5, n_tables=2, seed=9), degree=1).fit(X, y).predict(X)
    b = LSHTable(EuclideanLSH(3, 3, 0.5, n_tables=2, seed=9), degree=1).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)


@given(
    n=st.integers(1, 60),
    n_feat=st.integers(1, 5),
    n_slots=st.integers(1, 8),
    seed=st.integers(0, 2**31 - 1),
)
def test_accumulate_kernel_matches_numpy_reference(n, n_feat, n_slots, seed):
    rng = np.random.default_rng(seed)
    phi = rng.standard_normal((n, n_feat))
    y = rng.standard_normal(n)
    slot = rng.integers(0, n_slots, n)
    gram0 = rng.standard_normal((n_slots, n_feat, n_feat))
    gram0 = gram0 + gram0.transpose(0, 2, 1)  # Gram matrices are symmetric
    moment0 = rng.standard_normal((n_slots, n_feat))
    g_ref, m_ref = gram0.copy(), moment0.copy()
    _accumulate_reference(phi, y, slot, g_ref, m_ref)
    order = np.argsort(slot, kind="stable")
    s = slot[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    g, m = gram0.copy(), moment0.copy()
    _accumulate(np.ascontiguousarray(phi[order]), y[order], np.r_[starts, n].astype(np.int64), s[starts], g, m)
    np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(m, m_ref, rtol=1e-12, atol=1e-12)


def test_polynomial_powers():
    P = polynomial_powers(3, 2)
    assert P.shape == (math.comb(5, 2), 3)
    assert P[0].sum() == 0 and (P.sum(axis=1) <= 2).all()
    assert len({tuple(r) for r in P}) == len(P)


class _NoDim:
    n_tables = 1

    def bucket_ids(self, X):
        return (np.asarray(X)[:, :1] > 0).astype(np.int64)


def test_hasher_without_dim_fixes_dim_at_fit():
    X, y = _data(100, 4)
    model = LSHTable(_NoDim()).fit(X, y)
    assert model.n_features_in_ == 4
    with pytest.raises(ValueError, match=r"X must have shape \(N, 4\)"):
        model.predict(X[:, :3])


def test_bad_input_raises_value_error_naming_the_parameter():
    X, y = _data(50, 2)
    h = EuclideanLSH(2, 2, 0.5, seed=0)
    with pytest.raises(NotFittedError, match="not fitted"):
        LSHTable(h).predict(X)
    with pytest.raises(ValueError, match="not fitted"):
        LSHTable(h).bucket_members(0)
    with pytest.raises(ValueError, match="not fitted"):
        LSHTable(h).buckets_
    with pytest.raises(ValueError, match=r"X must have shape \(N, 2\)"):
        LSHTable(h).fit(np.zeros((5, 3)), np.zeros(5))
    with pytest.raises(ValueError, match="X must be finite"):
        LSHTable(h).fit(np.full((5, 2), np.nan), np.zeros(5))
    with pytest.raises(ValueError, match=r"y must have shape"):
        LSHTable(h).fit(X, y[:-1])
    with pytest.raises(ValueError, match=r"y must have shape"):
        LSHTable(h).fit(X, y[:, None])
    with pytest.raises(ValueError, match="y must be finite"):
        LSHTable(h).fit(X, np.where(np.arange(50) == 3, np.inf, y))
    with pytest.raises(ValueError, match="at least 1 point"):
        LSHTable(h).fit(np.zeros((0, 2)), np.zeros(0))
    with pytest.raises(ValueError, match=r"degree must be an integer >= 0"):
        LSHTable(h, degree=-1).fit(X, y)
    with pytest.raises(ValueError, match=r"ridge must be a finite real number in \[0, inf\]"):
        LSHTable(h, ridge=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="hasher must have `n_tables`"):
        LSHTable(object()).fit(X, y)
    with pytest.raises(ValueError, match="polynomial features"):
        LSHTable(EuclideanLSH(64, 2, 0.5), degree=3).fit(np.zeros((2, 64)), np.zeros(2))
    model = LSHTable(h).fit(X, y)
    with pytest.raises(ValueError, match=r"X must have shape \(N, 2\)"):
        model.predict(np.zeros((3, 5)))
    with pytest.raises(ValueError, match=r"table must be an integer in \[0, 0\]"):
        model.bucket_members(0, table=1)
    with pytest.raises(ValueError, match="key must be an integer"):
        model.bucket_members(0.5)
    model.degree = 1
    with pytest.raises(ValueError, match="must not change"):
        model.partial_fit(X, y)


# -- flags and overflow ----------------------------------------------------------------------
_X2 = np.random.default_rng(0).uniform(-1, 1, (40, 2))


def test_string_return_empty_flag_is_refused_not_read_by_truthiness():
    table = LSHTable(EuclideanLSH(2, 1, 1.0)).fit(_X2, _X2[:, 0])
    with pytest.raises(ValueError, match="must be True or False, got 'False'"):
        table.predict(_X2, return_empty="False")
    table.predict(_X2, return_empty=np.bool_(False))  # numpy bools are bools


def test_lsh_table_refuses_data_whose_sums_overflow():
    with pytest.raises(ValueError, match="y is too large"):
        LSHTable(EuclideanLSH(2, 1, 1.0)).fit(_X2, np.full(40, 1e308))
    with pytest.raises(ValueError, match="X is too large for degree=2"):
        LSHTable(EuclideanLSH(2, 1, 1e200), 2).fit(_X2 * 1e160, _X2[:, 0])
    with pytest.raises(ValueError, match="X is too large for degree=1"):
        LSHTable(EuclideanLSH(2, 1, 1e200), 1).fit(_X2 * 1e155, _X2[:, 0])
    table = LSHTable(EuclideanLSH(2, 1, 1e200), 1).fit(_X2 * 1e100, _X2[:, 0])  # just below
    assert np.isfinite(table.predict(_X2 * 1e100)).all()
