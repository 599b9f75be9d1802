"""``LSHTable``: the LSH(d, s, m, Δ) regression model of Baykal et al. 2022, §2.2.

A hasher with s tables maps x to one bucket per table. Each bucket of each table stores a
degree-Δ polynomial ĝ fitted by least squares to the training points in it (Δ = 0: their
mean); the prediction is the average over the s tables, g(x) = (1/s) Σ_i ĝ^i_{z^i}(x), i.e.
α_i = 1/s in the paper's notation.

Only sufficient statistics are stored per bucket: the Gram matrix Φᵀ Φ and the moment vector
Φᵀ y of its polynomial features (for Δ = 0 these are the count and the sum of y), so
``partial_fit`` adds points without revisiting old ones, and a fit in chunks equals a fit on
all the data.

Source: Baykal et al. 2022, §2.2 (LSH model) and §3.2 (storing one polynomial per bucket).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
from numba import njit, prange

from routing.validation import as_numpy, check_bool, check_int, check_points, check_real

__all__ = ["LSHTable", "NotFittedError", "polynomial_powers"]

# Gram matrices take n_buckets · P² floats: refuse feature counts that cannot be afforded.
MAX_POLY_FEATURES = 1024
# Rows of polynomial features built at once (bounds the memory of fit/predict).
_CHUNK_ELEMENTS = 1 << 22
# Eigenvalues of a bucket's Gram matrix below this fraction of its largest count as zero.
_RCOND = 1e-10


class NotFittedError(ValueError):
    """Raised when a table is used before ``fit`` (a ``ValueError``, as in scikit-learn)."""


def polynomial_powers(dim: int, degree: int) -> np.ndarray:
    """Exponents of all monomials in ``dim`` variables of total degree <= ``degree``.

    Order: by total degree, then ``itertools.combinations_with_replacement`` order of the
    variables (1, x0, x1, ..., x0², x0 x1, ...). Row j gives the exponents of feature j.

    Arguments:
        dim: number of variables, >= 1.
        degree: maximal total degree, >= 0.

    Returns:
        int64 array (C(dim + degree, degree), dim).

    Raises:
        ValueError: if ``dim`` < 1 or ``degree`` < 0.

    Source: the degree-Δ bucket polynomials of Baykal et al. 2022, §2.2.
    """
    dim = check_int(dim, "dim", 1)
    degree = check_int(degree, "degree", 0)
    rows = []
    for deg in range(degree + 1):
        for combo in itertools.combinations_with_replacement(range(dim), deg):
            rows.append(np.bincount(np.array(combo, np.int64), minlength=dim))
    return np.array(rows, np.int64).reshape(-1, dim)


def n_polynomial_features(dim: int, degree: int, cap: int = MAX_POLY_FEATURES) -> int:
    """C(dim + degree, degree), the number of monomials of ``polynomial_powers(dim, degree)``,
    or ``cap + 1`` as soon as it is known to exceed ``cap`` (math.comb of a huge dim and
    degree would run for hours; each factor here at least doubles the count, so at most
    log2(cap) + 1 steps are taken).
    """
    m = min(dim, degree)
    count = 1
    for i in range(1, m + 1):
        count = count * (dim + degree - m + i) // i
        if count > cap:
            return cap + 1
    return count


def _polynomial_features(X: np.ndarray, degree: int) -> np.ndarray:
    """(N, P) features in the order of ``polynomial_powers``: each monomial = parent · x_j."""
    n, dim = X.shape
    cols = [np.ones(n)]
    index = {(): 0}
    for deg in range(1, degree + 1):
        for combo in itertools.combinations_with_replacement(range(dim), deg):
            index[combo] = len(cols)
            cols.append(cols[index[combo[:-1]]] * X[:, combo[-1]])
    return np.stack(cols, axis=1)


@njit(cache=True, parallel=True)
def _accumulate(phi, y, seg_starts, seg_slots, gram, moment):
    """gram[slot] += Σ φφᵀ, moment[slot] += Σ φ y over each segment of rows.

    Parallel over buckets (segments go to distinct slots, so no two threads share a slot).

    Rows within a segment are added in order, so adding chunks one after the other gives
    bit-for-bit the sums of adding all rows at once.
    """
    n_feat = phi.shape[1]
    for s in prange(seg_slots.shape[0]):
        g = gram[seg_slots[s]]
        m = moment[seg_slots[s]]
        for r in range(seg_starts[s], seg_starts[s + 1]):
            for a in range(n_feat):
                pa = phi[r, a]
                m[a] += pa * y[r]
                for b in range(a, n_feat):
                    g[a, b] += pa * phi[r, b]
        for a in range(n_feat):
            for b in range(a + 1, n_feat):
                g[b, a] = g[a, b]


def _accumulate_reference(phi, y, slot, gram, moment):
    """Plain-numpy reference of ``_accumulate`` (row i goes to bucket slot[i])."""
    np.add.at(gram, slot, phi[:, :, None] * phi[:, None, :])
    np.add.at(moment, slot, phi * y[:, None])


def _solve(gram: np.ndarray, moment: np.ndarray, ridge: float) -> np.ndarray:
    """Least-squares coefficients from sufficient statistics, batched over buckets.

    ridge > 0: (G + ridge·I) c = m. ridge = 0: c = G⁺ m, the minimum-norm least-squares
    solution (equal to np.linalg.lstsq on the bucket's rows, since (ΦᵀΦ)⁺Φᵀ = Φ⁺).
    """
    n_feat = gram.shape[-1]
    if n_feat == 1:
        g = gram[:, 0, 0] + ridge
        return np.where(g > 0, moment[:, 0] / np.where(g > 0, g, 1.0), 0.0)[:, None]
    if ridge > 0:
        return np.linalg.solve(gram + ridge * np.eye(n_feat), moment[..., None])[..., 0]
    w, V = np.linalg.eigh(gram)  # (B, P), (B, P, P)
    keep = w > _RCOND * np.maximum(w[:, -1:], 0.0)
    inv = np.where(keep, 1.0 / np.where(keep, w, 1.0), 0.0)
    # V diag(inv) Vᵀ m, as two O(B P²) contractions
    return np.einsum("bij,bj->bi", V, inv * np.einsum("bkj,bk->bj", V, moment))


class _Table:
    """Sufficient statistics of one hash table; buckets get slots in order of first appearance."""

    def __init__(self, n_feat: int):
        self.keys = np.zeros(0, np.int64)  # slot -> key
        self.sorted_keys = np.zeros(0, np.int64)  # for searchsorted lookups
        self.sorted_slots = np.zeros(0, np.int64)
        self.gram = np.zeros((0, n_feat, n_feat))
        self.moment = np.zeros((0, n_feat))
        self.coef = np.zeros((0, n_feat))

    def lookup(self, keys: np.ndarray):
        """Slot of each key, and a mask of the keys present."""
        if len(self.sorted_keys) == 0:
            return np.zeros(len(keys), np.int64), np.zeros(len(keys), bool)
        pos = np.minimum(np.searchsorted(self.sorted_keys, keys), len(self.sorted_keys) - 1)
        found = self.sorted_keys[pos] == keys
        return self.sorted_slots[pos], found

    def add_keys(self, new_keys: np.ndarray):
        n_old, n_feat = len(self.keys), self.gram.shape[-1]
        self.keys = np.concatenate([self.keys, new_keys])
        grow = len(new_keys)
        if n_old + grow > len(self.gram):  # amortised doubling: partial_fit stays O(chunk)
            cap = max(n_old + grow, 2 * len(self.gram))
            shapes = {"gram": (n_feat, n_feat), "moment": (n_feat,), "coef": (n_feat,)}
            for name, shape in shapes.items():
                old = getattr(self, name)
                new = np.zeros((cap,) + shape)
                new[:n_old] = old[:n_old]
                setattr(self, name, new)
        order = np.argsort(self.keys, kind="stable")
        self.sorted_keys, self.sorted_slots = self.keys[order], order.astype(np.int64)


class LSHTable:
    """The LSH(d, s, m, Δ) model: one least-squares polynomial per bucket, averaged over tables.

    scikit-learn-like: ``__init__`` only stores the parameters; ``fit(X, y)`` builds the
    buckets and returns ``self``; ``partial_fit(X, y)`` adds points; ``predict(X)`` averages
    the s bucket values of each query.

    Bucket values. Degree 0: the mean of y over the bucket's training points. Degree Δ > 0:
    the polynomial c·φ(x) in the monomials φ of ``polynomial_powers(dim, Δ)`` (raw x, not
    centred) minimising Σ (c·φ(x_i) - y_i)² over the bucket. With ``ridge=0`` (default) the
    minimum-norm solution is used, so an under-determined bucket (fewer points than features,
    or collinear points) still gets a well-defined polynomial, the same one
    ``np.linalg.lstsq`` would return; it is computed from the Gram matrix as G⁺ Φᵀy with
    eigenvalues below 1e-10 · the largest one treated as zero. With ``ridge > 0`` the
    coefficients solve (G + ridge·I) c = Φᵀy (absolute ridge, also on the constant term; for
    Δ = 0 the bucket value is Σy / (n + ridge)).

    Empty buckets. A query whose bucket in table t holds no training point gets, for that table,
    the global mean of y over all training points seen so far (the constant Δ = 0 model on the
    whole data). ``predict(X, return_empty=True)`` also returns which (query, table) pairs
    fell back, and the table counts them in ``n_queries_`` / ``n_empty_queries_`` (per table,
    cumulative over ``predict`` calls since the last ``fit``; ``empty_query_fraction_`` is their
    ratio).

    Arguments:
        hasher: any object with ``n_tables`` and ``bucket_ids(X)`` → int64 (N, n_tables)
            (EuclideanLSH, HyperplaneLSH, CrossPolytopeLSH, UniformHash); its ``dim`` attribute,
            when not None, fixes the number of input columns.
        degree: Δ, the degree of the bucket polynomials, >= 0 (0: bucket means).
        ridge: Tikhonov parameter >= 0 for Δ > 0 (0: minimum-norm least squares).

    Learned attributes (after ``fit``):
        n_tables_: number of tables s (the hasher's ``n_tables`` at fit time).
        n_features_in_: input dimension.
        n_samples_seen_: number of training points.
        y_mean_: global mean of y, the empty-bucket fallback.
        powers_: int64 (P, dim), exponents of the features (``polynomial_powers``).
        buckets_: DataFrame with columns table, key, count (one row per non-empty bucket).
        n_queries_, n_empty_queries_: int64 (n_tables,) counters of ``predict``.
        empty_query_fraction_: float64 (n_tables,), their ratio (NaN before any query).

    Raises (from ``fit``/``partial_fit``/``predict``):
        ValueError: on a bad hasher (also one whose ``bucket_ids`` returns non-integer ids or
            the wrong shape), degree < 0, ridge < 0 or non-finite, more than 1024
            polynomial features, X not a finite (N, dim) array (dim = hasher.dim, or the
            dimension seen in ``fit``), y not a finite array of shape (N,), or a fit on 0 points.
        NotFittedError (a ValueError): ``predict``/``bucket_members``/``buckets_`` before ``fit``.

    Source: Baykal et al. 2022, §2.2 (the LSH(d, s, m, Δ) class) and §3.2.
    """

    def __init__(self, hasher, degree: int = 0, ridge: float = 0.0):
        self.hasher = hasher
        self.degree = degree
        self.ridge = ridge

    # ---------------------------------------------------------------- checks
    def _check_params(self):
        h = self.hasher
        if not (hasattr(h, "n_tables") and callable(getattr(h, "bucket_ids", None))):
            raise ValueError(
                f"hasher must have `n_tables` and a `bucket_ids(X)` method, got {type(h).__name__}"
            )
        check_int(h.n_tables, "hasher.n_tables", 1)
        degree = check_int(self.degree, "degree", 0)
        ridge = check_real(self.ridge, "ridge", 0, None)
        return degree, ridge

    def _check_fitted(self):
        if not hasattr(self, "_tables"):
            raise NotFittedError("this LSHTable is not fitted yet: call fit(X, y) first")

    def _check_X(self, X, n_cols=None):
        dim = getattr(self.hasher, "dim", None)
        return check_points(X, dim if dim is not None else n_cols)

    @staticmethod
    def _check_y(y, n: int) -> np.ndarray:
        arr = as_numpy(y)
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
        ):
            raise ValueError(f"y must be a real-valued array, got dtype {arr.dtype}")
        if arr.shape != (n,):
            raise ValueError(f"y must have shape (N,) = ({n},) to match X, got shape {arr.shape}")
        arr = arr.astype(np.float64)
        if not np.isfinite(arr).all():
            bad = int(np.count_nonzero(~np.isfinite(arr)))
            raise ValueError(f"y must be finite; it has {bad} NaN or infinite entries")
        return arr

    def _bucket_ids(self, X: np.ndarray) -> np.ndarray:
        ids = as_numpy(self.hasher.bucket_ids(X))
        if ids.dtype == np.bool_ or not np.issubdtype(ids.dtype, np.integer):
            # a cast would merge distinct ids (0.1 and 0.9 both become bucket 0)
            raise ValueError(f"hasher.bucket_ids must return integer bucket ids, got dtype "
                             f"{ids.dtype}")
        if ids.shape != (X.shape[0], self.n_tables_):
            raise ValueError(
                f"hasher.bucket_ids returned shape {ids.shape}, expected (N, n_tables) = "
                f"({X.shape[0]}, {self.n_tables_})"
            )
        return ids.astype(np.int64, copy=False)

    # ---------------------------------------------------------------- fitting
    def fit(self, X, y):
        """Fit the bucket values on (X, y), discarding any previous fit.

        Arguments:
            X: float array (N, dim), N >= 1, finite.
            y: float array (N,), finite.

        Returns:
            self.

        Raises:
            ValueError: see the class docstring; also when X or y is so large that the
                buckets' sums would overflow float64.
        """
        degree, ridge = self._check_params()
        for name in ("_tables", "_member_keys"):
            if hasattr(self, name):
                delattr(self, name)
        X = self._check_X(X)
        y = self._check_y(y, X.shape[0])
        if X.shape[0] == 0:
            raise ValueError("X must contain at least 1 point to fit, got 0")
        self._check_magnitudes(X, y, degree)
        n_feat = n_polynomial_features(X.shape[1], degree)
        if n_feat > MAX_POLY_FEATURES:
            raise ValueError(
                f"degree={degree} in dim={X.shape[1]} gives more than {MAX_POLY_FEATURES} "
                f"polynomial features; at most "
                f"{MAX_POLY_FEATURES} are supported (each bucket stores a P x P Gram matrix)"
            )
        self._degree, self._ridge = degree, ridge
        self.n_tables_ = int(self.hasher.n_tables)
        self.n_features_in_ = X.shape[1]
        self.powers_ = polynomial_powers(X.shape[1], degree)
        self.n_samples_seen_ = 0
        self._y_sum = 0.0
        self._tables = [_Table(n_feat) for _ in range(self.n_tables_)]
        self._member_keys = []  # per chunk: int64 (n_chunk, n_tables)
        self._members_index = None
        self.n_queries_ = np.zeros(self.n_tables_, np.int64)
        self.n_empty_queries_ = np.zeros(self.n_tables_, np.int64)
        self._insert(X, y)
        return self

    def partial_fit(self, X, y):
        """Add training points to the buckets without revisiting earlier ones.

        On an unfitted table this is ``fit``. Only the sufficient statistics of the buckets
        the new points land in change, so ``partial_fit`` on consecutive chunks gives the same
        model as ``fit`` on their concatenation (up to floating-point rounding of the
        coefficient solve), and point indices continue from the previous ones.

        Arguments:
            X: float array (N, dim), finite (N = 0 is a no-op once fitted).
            y: float array (N,), finite.

        Returns:
            self.

        Raises:
            ValueError: see the class docstring; also if the hasher's or the table's parameters
                changed since ``fit``.
        """
        if not hasattr(self, "_tables"):
            return self.fit(X, y)
        changed = int(self.hasher.n_tables) != self.n_tables_
        if self._check_params() != (self._degree, self._ridge) or changed:
            raise ValueError(
                "degree, ridge and hasher.n_tables must not change between fit and partial_fit"
            )
        X = self._check_X(X, self.n_features_in_)
        y = self._check_y(y, X.shape[0])
        if X.shape[0]:
            self._check_magnitudes(X, y, self._degree, self.n_samples_seen_, self._y_sum)
            self._insert(X, y)
        return self

    @staticmethod
    def _check_magnitudes(X: np.ndarray, y: np.ndarray, degree: int, n_before: int = 0,
                          y_sum: float = 0.0) -> None:
        """Refuse data whose sufficient statistics would overflow float64, before any state
        changes: the Gram entries are sums of N products of two monomials of degree <= Δ,
        the moments of a monomial times y, so with s = max(1, max|x|) both are at most
        N · s^Δ · max(s^Δ, max|y|)."""
        n = n_before + X.shape[0]
        with np.errstate(over="ignore"):
            total = abs(y_sum) + float(np.sum(np.abs(y)))
        if not math.isfinite(total):
            raise ValueError(f"y is too large: the sum of |y| over the training points "
                             f"overflows float64 (largest |y| is {float(np.max(np.abs(y))):.3g});"
                             " rescale y")
        if degree == 0 or X.size == 0:
            return
        log_s = math.log(max(1.0, float(np.max(np.abs(X)))))
        log_y = math.log(max(1.0, float(np.max(np.abs(y))))) if y.size else 0.0
        if math.log(n) + degree * log_s + max(degree * log_s, log_y) > 700.0:
            raise ValueError(
                f"X is too large for degree={degree}: the bucket Gram matrices of its "
                f"monomials would overflow float64 (largest |entry| of X is "
                f"{math.exp(log_s):.3g}); rescale X")

    def _insert(self, X: np.ndarray, y: np.ndarray):
        ids = self._bucket_ids(X)
        self._member_keys.append(ids)
        self._members_index = None
        self.n_samples_seen_ += X.shape[0]
        self._y_sum += float(y.sum())
        step = max(1, _CHUNK_ELEMENTS // self._tables[0].gram.shape[-1])
        for t, tab in enumerate(self._tables):
            keys = ids[:, t]
            uniq, first = np.unique(keys, return_index=True)
            _, found = tab.lookup(uniq)
            # new buckets get slots in order of first appearance
            tab.add_keys(uniq[~found][np.argsort(first[~found])])
            slot, _ = tab.lookup(keys)
            for lo in range(0, X.shape[0], step):
                sl = slot[lo : lo + step]
                order = np.argsort(sl, kind="stable")  # keeps insertion order inside a bucket
                s_sorted = sl[order]
                starts = np.flatnonzero(np.r_[True, s_sorted[1:] != s_sorted[:-1]])
                phi = _polynomial_features(X[lo : lo + step][order], self._degree)
                _accumulate(
                    phi, np.ascontiguousarray(y[lo : lo + step][order]),
                    np.r_[starts, len(sl)].astype(np.int64), s_sorted[starts], tab.gram, tab.moment,
                )
            touched = np.unique(slot)
            tab.coef[touched] = _solve(tab.gram[touched], tab.moment[touched], self._ridge)

    # ---------------------------------------------------------------- prediction
    def predict(self, X, return_empty: bool = False):
        """Average over the tables of the bucket polynomials at X.

        Arguments:
            X: float array (N, n_features_in_), finite.
            return_empty: also return which (query, table) pairs hit an empty bucket.

        Returns:
            float64 (N,) predictions; with ``return_empty=True`` a tuple (predictions, empty)
            where ``empty`` is bool (N, n_tables), True where the query's bucket in that table
            holds no training point and the global mean ``y_mean_`` was used.

        Raises:
            NotFittedError: before ``fit``.
            ValueError: if X is not a finite (N, n_features_in_) array, ``return_empty`` is
                not a bool, or a prediction overflows float64 (X far outside the training
                data's scale).
        """
        self._check_fitted()
        return_empty = check_bool(return_empty, "return_empty")
        X = self._check_X(X, self.n_features_in_)
        ids = self._bucket_ids(X)
        out = np.zeros(X.shape[0])
        empty = np.zeros(ids.shape, bool)
        step = max(1, _CHUNK_ELEMENTS // self._tables[0].gram.shape[-1])
        y_mean = self.y_mean_
        for lo in range(0, X.shape[0], step):
            phi = _polynomial_features(X[lo : lo + step], self._degree)
            for t, tab in enumerate(self._tables):
                slot, found = tab.lookup(ids[lo : lo + step, t])
                vals = np.einsum("np,np->n", phi, tab.coef[slot])
                out[lo : lo + step] += np.where(found, vals, y_mean)
                empty[lo : lo + step, t] = ~found
        out /= self.n_tables_
        if not np.isfinite(out).all():
            raise ValueError(
                f"X is too large: a degree-{self._degree} bucket polynomial overflows float64 at "
                f"{int(np.count_nonzero(~np.isfinite(out)))} of the queries (largest |entry| of X "
                f"is {float(np.max(np.abs(X))):.3g}); rescale X")
        self.n_queries_ += X.shape[0]
        self.n_empty_queries_ += empty.sum(axis=0)
        return (out, empty) if return_empty else out

    # ---------------------------------------------------------------- inspection
    @property
    def y_mean_(self) -> float:
        """Global mean of the training targets (the empty-bucket fallback)."""
        self._check_fitted()
        return self._y_sum / self.n_samples_seen_

    @property
    def empty_query_fraction_(self) -> np.ndarray:
        """float64 (n_tables,): fraction of queries that hit an empty bucket (NaN before any)."""
        self._check_fitted()
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = self.n_empty_queries_ / np.maximum(self.n_queries_, 1)
            return np.where(self.n_queries_ > 0, ratio, np.nan)

    @property
    def buckets_(self) -> pd.DataFrame:
        """Non-empty buckets: DataFrame with columns ``table``, ``key``, ``count`` (int64),
        sorted by table then key; for degree 0 also ``value`` (the bucket mean)."""
        self._check_fitted()
        frames = []
        for t, tab in enumerate(self._tables):
            n = len(tab.keys)
            s = tab.sorted_slots
            frame = {"table": np.full(n, t, np.int64), "key": tab.sorted_keys,
                     "count": np.rint(tab.gram[s, 0, 0]).astype(np.int64)}
            if self._degree == 0:
                frame["value"] = tab.coef[s, 0]
            frames.append(pd.DataFrame(frame))
        return pd.concat(frames, ignore_index=True)

    def bucket_values(self, table: int = 0):
        """Keys and fitted coefficients of one table's buckets.

        Arguments:
            table: 0..n_tables-1.

        Returns:
            (keys int64 (B,), coef float64 (B, P)), sorted by key; P = len(powers_) (P = 1 and
            coef[:, 0] = bucket mean for degree 0).

        Raises:
            NotFittedError: before ``fit``; ValueError: for a table outside 0..n_tables-1.
        """
        self._check_fitted()
        table = check_int(table, "table", 0, self.n_tables_ - 1)
        tab = self._tables[table]
        return tab.sorted_keys.copy(), tab.coef[tab.sorted_slots].copy()

    def bucket_members(self, key, table: int = 0) -> np.ndarray:
        """Indices of the training points in a bucket, in order of insertion.

        Indices count points across ``fit`` and all later ``partial_fit`` calls (the first
        point of the second chunk has index len(first chunk)).

        Arguments:
            key: bucket id (int).
            table: 0..n_tables-1.

        Returns:
            int64 array, ascending; empty if no training point fell in that bucket.

        Raises:
            NotFittedError: before ``fit``.
            ValueError: a non-integer key, or a table outside 0..n_tables-1.
        """
        self._check_fitted()
        table = check_int(table, "table", 0, self.n_tables_ - 1)
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
            raise ValueError(f"key must be an integer bucket id, got {key!r}")
        if self._members_index is None:
            keys = np.concatenate(self._member_keys, axis=0)
            order = np.argsort(keys, axis=0, kind="stable")  # stable: insertion order within a key
            self._members_index = (np.take_along_axis(keys, order, axis=0), order)
        sorted_keys, order = self._members_index
        col = sorted_keys[:, table]
        lo, hi = np.searchsorted(col, key, side="left"), np.searchsorted(col, key, side="right")
        return order[lo:hi, table].astype(np.int64)
