"""Bucket geometry: how many buckets are non-empty, how large they are, how wide they are.

These are the quantities Lemma 4.2 of Baykal et al. 2022 talks about: part 1 bounds the
diameter of every bucket's region inside Γ = (k-dim subspace) ∩ [-1, 1]^d, part 2 bounds the
number of buckets that meet Γ. Everything here works on bucket ids as returned by any hasher's
``bucket_ids`` (int64, shape (N,) for one table or (N, n_tables)), except
``bucket_region_diameter``, which needs the hash family's parameters.

Source: Baykal et al. 2022, §2.2 (Euclidean LSH model) and §4, Lemma 4.2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numba import njit, prange
from scipy import optimize, stats
from scipy.linalg import null_space
from scipy.spatial import HalfspaceIntersection, QhullError
from scipy.spatial.distance import pdist

from routing.validation import check_int, check_points, check_real

__all__ = [
    "n_nonempty_buckets",
    "bucket_size_histogram",
    "estimate_nonempty_buckets",
    "ChaoEstimate",
    "bucket_diameters",
    "bucket_region_diameter",
    "BucketRegion",
]

# Counting distinct keys uses a bitmap over the key range when the range spans fewer than
# min(2^24, 256·N + 4096) values: the bitmap (at most 2 MiB) stays in cache, and clearing plus
# popcounting it costs less than sorting N keys. Wider ranges (e.g. arbitrary 64-bit keys) are
# sorted: on them np.sort (SIMD-vectorised in numpy 2.x) beat the Numba hash sets we tried
# (linear probing, and hash-partitioned; 12-30 ns/key against about 10 ns/key for np.sort).
_BITMAP_MAX_BITS = 1 << 24
_BITMAP_BITS_PER_KEY = 256


# --------------------------------------------------------------------------------------------
# Input checks
# --------------------------------------------------------------------------------------------
def _check_ids(ids, name: str = "ids") -> np.ndarray:
    """Return ``ids`` as a 2-D C-contiguous int64 array (N, n_tables)."""
    arr = np.asarray(ids)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array of bucket ids, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2):
        raise ValueError(f"{name} must have shape (N,) or (N, n_tables), got shape {arr.shape}")
    if arr.dtype == np.uint64:
        arr = arr.view(np.int64)  # keeps distinct keys distinct (packed 64-bit sign patterns)
    arr = arr.astype(np.int64, copy=False)
    if arr.ndim == 1:
        arr = arr[:, None]
    return np.ascontiguousarray(arr)


# --------------------------------------------------------------------------------------------
# Counting distinct keys (Numba) and its plain-numpy reference
# --------------------------------------------------------------------------------------------
@njit(cache=True)
def _popcount64(v):
    v = v - ((v >> np.uint64(1)) & np.uint64(0x5555555555555555))
    v = (v & np.uint64(0x3333333333333333)) + ((v >> np.uint64(2)) & np.uint64(0x3333333333333333))
    v = (v + (v >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return np.int64((v * np.uint64(0x0101010101010101)) >> np.uint64(56))


@njit(cache=True)
def _count_distinct_column(ids, t):
    """Distinct values of ids[:, t] by a bitmap over their range; -1 if the range is too wide."""
    n = ids.shape[0]
    if n == 0:
        return 0
    limit = min(_BITMAP_MAX_BITS, _BITMAP_BITS_PER_KEY * n + 4096)
    kmin = ids[0, t]
    kmax = ids[0, t]
    for i in range(1, n):
        k = ids[i, t]
        if k < kmin or k > kmax:
            kmin = min(kmin, k)
            kmax = max(kmax, k)
            # unsigned difference: exact for any int64 pair (signed overflow is undefined in LLVM)
            if np.uint64(kmax) - np.uint64(kmin) >= np.uint64(limit):
                return -1  # give up at once: wide keys go to np.sort
    span = kmax - kmin
    bitmap = np.zeros((span >> 6) + 1, np.uint64)
    for i in range(n):
        d = ids[i, t] - kmin
        bitmap[d >> 6] |= np.uint64(1) << np.uint64(d & 63)
    total = 0
    for w in range(bitmap.shape[0]):
        total += _popcount64(bitmap[w])
    return total


@njit(cache=True, parallel=True)
def _count_distinct_columns(ids):
    out = np.empty(ids.shape[1], np.int64)
    for t in prange(ids.shape[1]):  # one thread per table
        out[t] = _count_distinct_column(ids, t)
    return out


def _count_distinct_reference(ids: np.ndarray) -> np.ndarray:
    """Plain-numpy reference: sort each column and count value changes."""
    out = np.zeros(ids.shape[1], np.int64)
    for t in range(ids.shape[1]):
        if ids.shape[0]:
            s = np.sort(ids[:, t])
            out[t] = 1 + np.count_nonzero(s[1:] != s[:-1])
    return out


def n_nonempty_buckets(ids):
    """Number of distinct bucket ids (= non-empty buckets) per table.

    One pass over the keys finds their range. If it spans fewer than min(2^24, 256·N + 4096)
    values (codebook ids of ``EuclideanLSH``, ``HyperplaneLSH`` keys of up to ~24 bits, ...) a
    second pass marks a bitmap of the range and its popcount is the answer (Numba; several
    tables run in parallel, one thread per table). Wider ranges (arbitrary 64-bit keys) are
    counted by ``np.sort`` and counting changes, the reference recipe.

    Arguments:
        ids: integer array, shape (N,) for one table or (N, n_tables); any integer dtype
            (uint64 keys are reinterpreted as int64, which keeps distinct keys distinct).

    Returns:
        ``int`` for 1-D ``ids``; int64 array of shape (n_tables,) for 2-D ``ids``. 0 when N = 0.

    Raises:
        ValueError: if ``ids`` is not an integer array of shape (N,) or (N, n_tables).

    Source: Baykal et al. 2022, Lemma 4.2 part 2 (the number of non-empty buckets).
    """
    one_table = np.ndim(ids) == 1
    arr = _check_ids(ids)
    if arr.shape[1] == 1:  # no thread pool for a single table
        counts = np.array([_count_distinct_column(arr, 0)], np.int64)
    else:
        counts = _count_distinct_columns(arr)
    for t in np.flatnonzero(counts < 0):
        counts[t] = _count_distinct_reference(arr[:, t : t + 1])[0]
    return int(counts[0]) if one_table else counts


# --------------------------------------------------------------------------------------------
# Bucket sizes and the Chao1 estimate of non-empty buckets
# --------------------------------------------------------------------------------------------
def _bucket_sizes(column: np.ndarray) -> np.ndarray:
    """Sizes (number of points) of the non-empty buckets of one table, in key order."""
    if column.shape[0] == 0:
        return np.zeros(0, np.int64)
    kmin, kmax = int(column.min()), int(column.max())
    if kmax - kmin <= 4 * column.shape[0] + 1024:
        counts = np.bincount(column - kmin)
        return counts[counts > 0].astype(np.int64)
    return np.unique(column, return_counts=True)[1].astype(np.int64)


def bucket_size_histogram(ids):
    """Histogram of bucket sizes: how many buckets hold exactly j training points.

    Arguments:
        ids: integer array of bucket ids, shape (N,) or (N, n_tables).

    Returns:
        int64 array ``hist`` with ``hist[j]`` = number of buckets holding exactly j points,
        j = 0..max size (``hist[0]`` is always 0: empty buckets are not observed). Shape
        (max_size + 1,) for 1-D ``ids``; (n_tables, max_size + 1) for 2-D ``ids``, padded with
        zeros to the largest size over all tables. ``hist.sum(-1)`` is the number of non-empty
        buckets and ``(hist * arange).sum(-1)`` is N. For N = 0 the shape is (1,) / (n_tables, 1).

    Raises:
        ValueError: if ``ids`` is not an integer array of shape (N,) or (N, n_tables).

    Source: the frequency counts f_j of Chao 1987 (used by ``estimate_nonempty_buckets``).
    """
    one_table = np.ndim(ids) == 1
    arr = _check_ids(ids)
    per_table = [np.bincount(_bucket_sizes(arr[:, t])) for t in range(arr.shape[1])]
    width = max([len(h) for h in per_table] + [1])
    hist = np.zeros((arr.shape[1], width), np.int64)
    for t, h in enumerate(per_table):
        hist[t, : len(h)] = h
    return hist[0] if one_table else hist


@dataclass(frozen=True)
class ChaoEstimate:
    """Chao1 estimate of the number of non-empty buckets on the whole support.

    Attributes:
        n_samples: sample size n (number of hashed points).
        n_observed: number of distinct buckets seen, S_obs.
        f1, f2: number of buckets seen exactly once / exactly twice.
        chao1: bias-corrected Chao1 estimate S_obs + (n-1)/n · f1(f1-1) / (2(f2+1)).
        unseen: ``chao1 - n_observed``, the estimated number of non-empty buckets not seen.
        std: estimated standard deviation of ``chao1`` (when f1 <= 1, where nothing is
            extrapolated, that of the observed count, from the frequencies).
        ci_low, ci_high: confidence interval for the total number of non-empty buckets.
        confidence: the interval's nominal coverage.
    """

    n_samples: int
    n_observed: int
    f1: int
    f2: int
    chao1: float
    unseen: float
    std: float
    ci_low: float
    ci_high: float
    confidence: float


def _chao1(sizes: np.ndarray, confidence: float) -> ChaoEstimate:
    n = int(sizes.sum())
    s_obs = int(sizes.shape[0])
    f1 = int(np.count_nonzero(sizes == 1))
    f2 = int(np.count_nonzero(sizes == 2))
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    if n == 0:
        return ChaoEstimate(0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, confidence)
    K = (n - 1) / n
    s = s_obs + K * f1 * (f1 - 1) / (2 * (f2 + 1))
    if f2 > 0:
        var = (
            K * f1 * (f1 - 1) / (2 * (f2 + 1))
            + K**2 * f1 * (2 * f1 - 1) ** 2 / (4 * (f2 + 1) ** 2)
            + K**2 * f1**2 * f2 * (f1 - 1) ** 2 / (4 * (f2 + 1) ** 4)
        )
    else:
        var = (
            K * f1 * (f1 - 1) / 2
            + K**2 * f1 * (2 * f1 - 1) ** 2 / 4
            - K**2 * f1**4 / (4 * s)
        )
    var = max(var, 0.0)
    unseen = s - s_obs
    if unseen > 1e-9:
        # log-normal interval for the unseen part (Chao 1987), so that ci_low >= S_obs
        c = math.exp(z * math.sqrt(math.log(1 + var / unseen**2)))
        lo, hi = s_obs + unseen / c, s_obs + unseen * c
    else:
        # f1 <= 1: no singletons to extrapolate from; Chao's interval from the observed
        # frequencies (as in Chao & Chiu's SpadeR), detection probability P = Σ f_i e^-i / S_obs
        i = np.arange(1, int(sizes.max()) + 1)
        f = np.bincount(sizes, minlength=i[-1] + 1)[1:]
        e = np.exp(-i)
        var_obs = max(float(np.sum(f * (e - e**2)) - np.sum(i * e * f) ** 2 / n), 0.0)
        p = float(np.sum(f * e)) / s_obs
        lo = max(s_obs, s_obs / (1 - p) - z * math.sqrt(var_obs) / (1 - p))
        hi = s_obs / (1 - p) + z * math.sqrt(var_obs) / (1 - p)
        var = var_obs
    return ChaoEstimate(
        n, s_obs, f1, f2, float(s), float(unseen), math.sqrt(var), float(lo), float(hi), confidence
    )


def estimate_nonempty_buckets(ids, confidence: float = 0.95):
    """Estimate how many buckets are non-empty on the whole support from a sample of it.

    ``ids`` are the bucket ids of n points drawn from the input distribution. The observed count
    S_obs misses buckets of small probability; the bias-corrected Chao1 estimator adds an
    estimate of the unseen ones from the numbers of singleton (f1) and doubleton (f2) buckets:

        S_chao1 = S_obs + (n - 1)/n · f1 (f1 - 1) / (2 (f2 + 1)).

    Its variance is the bias-corrected formula of Chao 2005 (with the (n-1)/n factors as in
    Chao & Chiu's SpadeR); the interval is Chao's (1987) log-normal interval
    S_obs + T/C .. S_obs + T·C with T = S_chao1 - S_obs, C = exp(z sqrt(log(1 + var/T²))),
    which never goes below S_obs. When T = 0 (f1 <= 1) the interval is built from the observed
    frequencies instead (see the code). Chao1 is nearly unbiased when the rare buckets have
    similar probabilities and a lower bound otherwise (Chao 1984).

    Arguments:
        ids: integer bucket ids of the sample, shape (N,) or (N, n_tables).
        confidence: nominal coverage of the interval, in (0, 1).

    Returns:
        A ``ChaoEstimate`` for 1-D ``ids``; a list of ``n_tables`` of them for 2-D ``ids``.

    Raises:
        ValueError: if ``ids`` is not an integer array of shape (N,) or (N, n_tables), or
            ``confidence`` is not in (0, 1).

    Source: Chao 1984 (Scand. J. Stat. 11:265-270) and 1987 (Biometrics 43:783-791); Chao 2005,
    "Species estimation and applications", Encyclopedia of Statistical Sciences. Used for
    Baykal et al. 2022, Lemma 4.2 part 2.
    """
    confidence = check_real(confidence, "confidence", 0, 1, low_open=True, high_open=True)
    one_table = np.ndim(ids) == 1
    arr = _check_ids(ids)
    out = [_chao1(_bucket_sizes(arr[:, t]), confidence) for t in range(arr.shape[1])]
    return out[0] if one_table else out


# --------------------------------------------------------------------------------------------
# Diameters of the training points in each bucket
# --------------------------------------------------------------------------------------------
@njit(cache=True, parallel=True)
def _row_max_sqdist(Xs, bucket_end):
    """For each row i, the largest squared distance to a later row of its bucket."""
    n, d = Xs.shape
    out = np.zeros(n, np.float64)
    # parallel over rows, not buckets: one huge bucket would otherwise run on a single thread
    for i in prange(n):
        best = 0.0
        for j in range(i + 1, bucket_end[i]):
            s = 0.0
            for c in range(d):
                diff = Xs[i, c] - Xs[j, c]
                s += diff * diff
            if s > best:
                best = s
        out[i] = best
    return out


def _bucket_diameters_reference(Xs: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Plain-numpy reference: all pairwise distances of each bucket, one bucket at a time."""
    out = np.zeros(len(starts) - 1)
    for b in range(len(starts) - 1):
        P = Xs[starts[b] : starts[b + 1]]
        if len(P) > 1:
            out[b] = np.sqrt(((P[:, None, :] - P[None, :, :]) ** 2).sum(-1).max())
    return out


def bucket_diameters(X, ids) -> pd.DataFrame:
    """Exact diameter of the training points in each bucket, and the centroid bound.

    The exact diameter is the largest pairwise Euclidean distance between points sharing a
    bucket (O(Σ_b n_b² · dim) work, Numba, parallel over points); the centroid bound
    2 · max_i ||x_i - centroid|| is ≥ the diameter (triangle inequality) and costs O(N · dim).

    Arguments:
        X: points, float array of shape (N, dim), finite.
        ids: integer bucket ids, shape (N,) or (N, n_tables).

    Returns:
        ``pandas.DataFrame`` with one row per (table, non-empty bucket), sorted by table then
        key, columns ``table`` (int64), ``key`` (int64), ``count`` (int64, points in the bucket),
        ``diameter`` (float64, same units as X; 0 for a single point) and ``centroid_bound``
        (float64).

    Raises:
        ValueError: if ``X`` is not a finite (N, dim) array, is so large that squared distances
            overflow float64, or ``ids`` is not an integer array with N rows.

    Source: Baykal et al. 2022, Lemma 4.2 part 1 (bucket diameters), measured on samples.
    """
    X = check_points(X)
    arr = _check_ids(ids)
    if arr.shape[0] != X.shape[0]:
        raise ValueError(f"ids must have one row per point of X ({X.shape[0]}), got {arr.shape[0]}")
    largest = float(np.abs(X).max()) if X.size else 0.0
    if 4.0 * X.shape[1] * largest * largest > np.finfo(np.float64).max / 4:
        # a squared distance ||x - x'||² <= 4·dim·max|x|² (with room for its sums) overflows
        raise ValueError(f"X is too large: its squared distances overflow float64 (largest "
                         f"|entry| {largest:.3g}); rescale X")
    frames = []
    for t in range(arr.shape[1]):
        order = np.argsort(arr[:, t], kind="stable")
        keys_sorted = arr[order, t]
        Xs = np.ascontiguousarray(X[order])
        first = np.flatnonzero(np.r_[True, keys_sorted[1:] != keys_sorted[:-1]])[: len(order)]
        starts = np.r_[first, len(order)].astype(np.int64)
        counts = np.diff(starts)
        bucket_end = np.repeat(starts[1:], counts)
        row_max = _row_max_sqdist(Xs, bucket_end)
        if len(first):
            diam = np.sqrt(np.maximum.reduceat(row_max, first))
            centroids = np.add.reduceat(Xs, first, axis=0) / counts[:, None]
            radius = np.linalg.norm(Xs - np.repeat(centroids, counts, axis=0), axis=1)
            bound = 2 * np.maximum.reduceat(radius, first)
        else:
            diam = bound = np.zeros(0)
        frames.append(
            pd.DataFrame(
                {
                    "table": np.full(len(first), t, np.int64),
                    "key": keys_sorted[first].astype(np.int64),
                    "count": counts.astype(np.int64),
                    "diameter": diam,
                    "centroid_bound": bound,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------------------------
# Exact diameter of a bucket's region inside Γ = subspace ∩ cube (Lemma 4.2 part 1)
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BucketRegion:
    """The closure of a bucket's region inside Γ = span(basis) ∩ [-1, 1]^dim.

    Attributes:
        diameter: largest distance between two points of the region (same units as x);
            0.0 when the region is empty or a single point.
        is_empty: True when the bucket does not meet Γ (even on its boundary).
        dimension: affine dimension of the region (0..k); -1 when empty. A region of dimension
            < k has zero k-volume: points drawn uniformly on Γ land in it with probability 0.
        vertices: float64 (n_vertices, dim), the region's vertices in input coordinates
            (empty (0, dim) when ``is_empty``).
        vertices_z: float64 (n_vertices, k), the same vertices in subspace coordinates z
            (x = basis @ z).
    """

    diameter: float
    is_empty: bool
    dimension: int
    vertices: np.ndarray
    vertices_z: np.ndarray


def _region_halfspaces(hasher, key: int, basis: np.ndarray, table: int):
    """Constraints G z <= h (closure of the bucket ∩ cube) in subspace coordinates z."""
    dim = basis.shape[0]
    if hasattr(hasher, "offsets") and hasattr(hasher, "bucket_codes") and hasattr(hasher, "width"):
        # EuclideanLSH: code_i · w <= a_i·x + b_i <= (code_i + 1) · w  for every hash i
        code = hasher.bucket_codes(np.array([key], np.int64), table=table)
        code = np.asarray(code, np.float64)[0]
        A = np.asarray(hasher.directions, np.float64)[table] @ basis  # (n_hashes, k)
        b = np.asarray(hasher.offsets, np.float64)[table]
        w = float(hasher.width)
        G = np.vstack([-A, A])
        h = np.concatenate([b - code * w, (code + 1) * w - b])
    elif hasattr(hasher, "n_bits") and hasattr(hasher, "directions"):
        # HyperplaneLSH: bit i of the key is 1 iff d_i·x >= 0 (closure: d_i·x <= 0 when 0)
        n_bits = int(hasher.n_bits)
        ukey = np.array([key], np.int64).view(np.uint64)[0]
        if n_bits < 64 and int(ukey) >> n_bits:
            raise ValueError(
                f"key must be in [0, 2^{n_bits}) for a HyperplaneLSH with n_bits={n_bits}, "
                f"got {key}"
            )
        bits = np.array([(int(ukey) >> i) & 1 for i in range(n_bits)], np.float64)
        A = np.asarray(hasher.directions, np.float64)[table] @ basis  # (n_bits, k)
        G = np.where(bits[:, None] == 1, -A, A)
        h = np.zeros(n_bits)
    else:
        raise ValueError(
            "hasher must be a EuclideanLSH or a HyperplaneLSH (the only families whose buckets "
            f"are polytopes), got {type(hasher).__name__}"
        )
    G = np.vstack([G, basis, -basis])  # the cube: -1 <= (basis z)_j <= 1
    h = np.concatenate([h, np.ones(dim), np.ones(dim)])
    return G, h


def _empty_region(dim: int, k: int) -> BucketRegion:
    return BucketRegion(0.0, True, -1, np.zeros((0, dim)), np.zeros((0, k)))


def _interval(g: np.ndarray, h: np.ndarray, tol: float):
    """{u : g u <= h} for scalar u; returns (lo, hi) or None if empty."""
    pos, neg = g > 0, g < 0
    hi = np.min(h[pos] / g[pos]) if pos.any() else np.inf
    lo = np.max(h[neg] / g[neg]) if neg.any() else -np.inf
    if lo > hi + tol:
        return None
    return lo, max(lo, hi)


def _implicit_equalities(G: np.ndarray, h: np.ndarray, bound: float, tol: float):
    """Indices of constraints tight on the whole polytope, and a feasible point (or None).

    Repeatedly maximise the total slack (each capped at 1) of the constraints not yet known to
    have slack somewhere; those with positive slack are freed; when the optimum is 0 the rest
    are implicit equalities (no point of the polytope gives any of them slack).
    """
    m, k = G.shape
    undecided = np.ones(m, bool)
    z_last = None
    while undecided.any():
        U = np.flatnonzero(undecided)
        n_u = len(U)
        # variables (z, t_U); minimise -sum t  s.t.  G z + E_U t <= h
        c = np.r_[np.zeros(k), -np.ones(n_u)]
        A = np.hstack([G, np.zeros((m, n_u))])
        A[U, k + np.arange(n_u)] = 1.0
        bounds = [(-bound, bound)] * k + [(0.0, 1.0)] * n_u
        res = optimize.linprog(c, A_ub=A, b_ub=h, bounds=bounds, method="highs")
        if res.status == 2:
            return None, None
        if res.status != 0:
            raise RuntimeError(f"linprog failed while finding the bucket region: {res.message}")
        z_last = res.x[:k]
        t = res.x[k:]
        freed = U[t > tol]
        if len(freed) == 0:
            break
        undecided[freed] = False
    return np.flatnonzero(undecided), z_last


def bucket_region_diameter(hasher, key, basis, table: int = 0) -> BucketRegion:
    """Exact diameter of one bucket's region inside Γ = span(basis) ∩ [-1, 1]^dim.

    Points of Γ are x = basis @ z with z ∈ R^k. A bucket of a ``EuclideanLSH`` is
    {x : code_i · w <= a_i·x + b_i < (code_i + 1) · w for all hashes i}; of a ``HyperplaneLSH``
    it is a sign pattern {x : d_i·x >= 0 iff bit i of key is 1}. Together with the cube
    -1 <= x_j <= 1 these are linear inequalities in z, so the region is a polytope in R^k. We
    work with its closure (strict inequalities made non-strict; the diameter of a set equals
    that of its closure). Since basis has orthonormal columns, distances in z equal distances
    in R^dim.

    Method: constraints tight on the whole polytope (implicit equalities, e.g. a cone that
    meets the subspace only at 0) are found by linear programs (scipy.optimize.linprog, HiGHS)
    and eliminated by restricting z to their affine hull (scipy.linalg.null_space); in the
    remaining full-dimensional coordinates an interior point is the Chebyshev centre (another
    linprog), the vertices come from scipy.spatial.HalfspaceIntersection, and the diameter is
    the largest vertex-to-vertex distance. One-dimensional regions are intervals computed in
    closed form. Tolerance: a slack below 1e-9 (constraints normalised to unit normals, so in
    units of x) counts as zero.

    Arguments:
        hasher: a ``EuclideanLSH`` (uses ``directions``, ``offsets``, ``width`` and
            ``bucket_codes``) or a ``HyperplaneLSH`` (uses ``directions`` and ``n_bits``).
        key: the bucket's id in table ``table``, as returned by ``hasher.bucket_ids`` (for
            EuclideanLSH it must be a key the hasher has produced, so that its code is known).
        basis: float array (dim, k) with orthonormal columns spanning the subspace; 1 <= k <= 4.
        table: which of the hasher's tables, 0..n_tables-1.

    Returns:
        ``BucketRegion`` with the diameter, whether the region is empty (the bucket does not
        meet Γ: diameter 0.0, dimension -1, no vertices), its affine dimension and vertices.

    Raises:
        ValueError: if ``hasher`` is of another family, ``table`` is outside 0..n_tables-1,
            ``key`` is not an integer (or not a key of the hasher), ``basis`` is not a finite
            (dim, k) array with orthonormal columns, or k is outside 1..4 (vertex enumeration
            grows exponentially with k; larger k is unsupported).
        RuntimeError: if the LP solver or Qhull fails on a numerically ill-posed region.

    Source: Baykal et al. 2022, Lemma 4.2 part 1; Euclidean LSH of §2.2 (Datar et al. 2004);
    hyperplane LSH (Charikar 2002).
    """
    dim = getattr(hasher, "dim", None)
    if dim is None:
        raise ValueError(f"hasher must have an input dimension `dim`, got {type(hasher).__name__}")
    table = check_int(table, "table", 0, int(hasher.n_tables) - 1)
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)):
        raise ValueError(f"key must be an integer bucket id, got {key!r}")
    basis = np.asarray(basis)
    if basis.ndim != 2 or basis.shape[0] != dim:
        raise ValueError(f"basis must have shape (dim={dim}, k), got shape {basis.shape}")
    k = basis.shape[1]
    if not 1 <= k <= 4:
        raise ValueError(
            f"k = basis.shape[1] must be an integer in [1, 4] (vertex enumeration is unsupported "
            f"for k > 4), got k={k}"
        )
    basis = check_points(basis, k, name="basis")
    if not np.allclose(basis.T @ basis, np.eye(k), atol=1e-8):
        raise ValueError("basis must have orthonormal columns (basis.T @ basis == I_k within 1e-8)")

    G, h = _region_halfspaces(hasher, int(key), basis, table)
    tol = 1e-9
    norms = np.linalg.norm(G, axis=1)
    flat = norms <= 1e-12
    if np.any(h[flat] < -tol):  # 0 <= negative: the bucket misses the subspace entirely
        return _empty_region(dim, k)
    G, h = G[~flat] / norms[~flat, None], h[~flat] / norms[~flat]

    if k == 1:
        iv = _interval(G[:, 0], h, tol)
        if iv is None:
            return _empty_region(dim, k)
        lo, hi = iv
        z = np.array([[lo], [hi]]) if hi > lo else np.array([[lo]])
        return BucketRegion(float(hi - lo), False, int(hi > lo), z @ basis.T, z)

    bound = math.sqrt(dim) + 1.0  # |z| = |x| <= sqrt(dim) on the cube
    eq, z0 = _implicit_equalities(G, h, bound, tol)
    if eq is None:
        return _empty_region(dim, k)
    N = null_space(G[eq]) if len(eq) else np.eye(k)  # (k, k'), orthonormal columns
    kk = N.shape[1]
    if kk == 0:
        zv = z0[None, :]
        return BucketRegion(0.0, False, 0, zv @ basis.T, zv)
    free = np.setdiff1d(np.arange(len(h)), eq)
    Gu = G[free] @ N  # constraints on u, where z = z0 + N u
    hu = h[free] - G[free] @ z0
    nrm = np.linalg.norm(Gu, axis=1)
    keep = nrm > 1e-12
    Gu, hu = Gu[keep] / nrm[keep, None], hu[keep] / nrm[keep]
    if kk == 1:
        lo, hi = _interval(Gu[:, 0], hu, np.inf)
        u = np.array([[lo], [hi]])
    else:
        # Chebyshev centre: maximise r s.t. Gu u + r <= hu (rows have unit norm)
        c = np.r_[np.zeros(kk), -1.0]
        res = optimize.linprog(
            c, A_ub=np.hstack([Gu, np.ones((len(hu), 1))]), b_ub=hu,
            bounds=[(-bound, bound)] * kk + [(0.0, None)], method="highs",
        )
        if res.status != 0 or res.x[-1] <= 0:
            raise RuntimeError(f"no interior point found for the bucket region: {res.message}")
        try:
            hs = HalfspaceIntersection(np.hstack([Gu, -hu[:, None]]), res.x[:kk])
        except QhullError as err:  # pragma: no cover - numerically ill-posed input
            raise RuntimeError(f"Qhull failed on the bucket region: {err}") from err
        u = hs.intersections
    zv = z0[None, :] + u @ N.T
    diameter = float(pdist(zv).max()) if len(zv) > 1 else 0.0
    return BucketRegion(diameter, False, kk, zv @ basis.T, zv)
