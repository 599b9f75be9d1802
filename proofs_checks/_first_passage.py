"""One draw of the single-table LSH learner of Baykal et al. 2022, Theorem 4.1 (and B.1): the
bucket means of a fixed test set fed nested prefixes of an i.i.d. stream, stopped at the first
grid n whose ℓ∞ error is ≤ ε, at a floor, or at the cap (``first_success``). The checks built
on it, and why the draw is defined this way: ``proofs_checks._nstar``.

Source: Baykal et al. 2022, Theorem 4.1, Theorem B.1 (§4); the degree-0 learner is
``routing.lsh_table.LSHTable``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from inference.exponents import fit_exponent
from proofs_checks._framework import child_seeds
from routing.lsh_table import LSHTable

__all__ = ["BucketMeans", "DrawOutcome", "spread_floor", "first_success", "FLOOR_MIN_COUNT"]

#: Training points a bucket needs before its mean can reveal a floor (``BucketMeans.floor_z``).
FLOOR_MIN_COUNT = 20


class BucketMeans:
    """The degree-0 ``LSHTable`` (one table) evaluated at a fixed query set, fed bucket keys.

    The fast path of the check: ``add(keys, y)`` updates the count, sum and sum of squares of
    y of the query buckets only (and the global mean), so a prefix costs O(its points +
    queries) and every n of the grid costs only its new points. ``predict()`` is what
    ``LSHTable(hasher, degree=0).fit(X, y).predict(X_query)`` returns — the bucket mean, or the
    global mean of y for an empty bucket; ``NStarCheck`` checks this against ``LSHTable`` on
    the first draw of every setting. ``first_success`` calls ``add_and_score``, which does
    ``add``, ``predict`` and ``floor_z`` in one compiled pass with the same numbers, bit for
    bit (the three stay as the readable steps, and a test holds the pass equal to them).

    Arguments:
        query_keys: int (T,) bucket keys of the queries.
    """

    def __init__(self, query_keys):
        keys = np.asarray(query_keys, np.int64).ravel()
        self._uniq, self._inv = np.unique(keys, return_inverse=True)
        # small non-negative keys (a codebook's dense bucket ids, the test points hashed
        # first): a lookup table, entries 1..high+1 for keys 0..high, 0 and high+2 for the
        # keys below and above (-1, no query bucket); else a binary search (``slots``)
        self._table = None
        high = int(self._uniq[-1]) if len(self._uniq) else -1
        if len(self._uniq) and self._uniq[0] >= 0 and high < 8 * len(self._uniq) + 4096:
            self._table = np.full(high + 3, -1, np.int64)
            self._table[self._uniq + 1] = np.arange(len(self._uniq))
        self._count = np.zeros(len(self._uniq))
        self._sum = np.zeros(len(self._uniq))
        self._sq = np.zeros(len(self._uniq))
        self._keys: list[np.ndarray] = []
        self.n_points = 0
        self._y_sum = 0.0

    def slots(self, keys) -> np.ndarray:
        """Index of each key's query bucket, −1 for keys of no query: int (N,)."""
        keys = np.asarray(keys, np.int64)
        if self._table is not None:
            return self._table[np.clip(keys, -1, len(self._table) - 2) + 1]
        pos = np.minimum(np.searchsorted(self._uniq, keys), len(self._uniq) - 1)
        return np.where(self._uniq[pos] == keys, pos, -1)

    def add(self, keys, y, slots=None) -> None:
        """Add training points by their bucket keys int (N,) and targets float (N,)
        (``slots``: their ``slots(keys)``, when already computed)."""
        keys = np.asarray(keys, np.int64)
        y = np.asarray(y, np.float64)
        if len(keys) == 0:
            return
        slots = self.slots(keys) if slots is None else slots
        hit = slots >= 0
        if hit.any():
            pos, yy = slots[hit], y[hit]
            self._count += np.bincount(pos, minlength=len(self._uniq))
            self._sum += np.bincount(pos, weights=yy, minlength=len(self._uniq))
            self._sq += np.bincount(pos, weights=yy * yy, minlength=len(self._uniq))
        self._keys.append(keys)
        self.n_points += len(keys)
        self._y_sum += float(y.sum())

    def predict(self) -> tuple[np.ndarray, np.ndarray]:
        """(prediction float64 (T,), empty bool (T,)); all NaN and empty before any point."""
        count = self._count[self._inv]
        empty = count == 0
        if self.n_points == 0:
            return np.full(len(self._inv), np.nan), empty
        mean = self._y_sum / self.n_points
        return np.where(empty, mean, self._sum[self._inv] / np.maximum(count, 1)), empty

    def floor_z(self, y_query, epsilon: float, min_count: int = 10, among=None) -> float:
        """The largest z = (|y_q − mean_b| − ε) / SE(mean_b) over queries q whose bucket b
        holds ≥ ``min_count`` points (SE = sample sd / √count; 0 when none qualifies).

        As n grows a bucket mean tends to E[f | bucket], with standard error SE; a query whose
        error exceeds ε by many SE will stay above ε: the bucket is too coarse, not short of
        samples (an error floor of the draw).

        Arguments:
            y_query: (T,) targets of the queries. epsilon: ε. min_count: points needed.
            among: optional bool (T,) mask of the queries to consider.
        """
        inv = self._inv if among is None else self._inv[among]
        y_query = np.asarray(y_query) if among is None else np.asarray(y_query)[among]
        count = self._count[inv]
        ok = count >= min_count
        if not ok.any():
            return 0.0
        n = count[ok]
        mean = self._sum[inv][ok] / n
        var = np.maximum(self._sq[inv][ok] / n - mean**2, 0.0) * n / (n - 1)
        gap = np.abs(y_query[ok] - mean) - epsilon
        se = np.sqrt(var / n)
        z = np.where(se > 0, gap / np.where(se > 0, se, 1.0), np.where(gap > 0, np.inf, -np.inf))
        return float(max(z.max(), 0.0))

    def add_and_score(self, keys, y, slots, y_query, epsilon: float,
                      min_count: int = FLOOR_MIN_COUNT):
        """``add(keys, y, slots)``, then ``predict()``, the errors at the queries and the
        floor z of the queries that violate ε: one compiled pass (``_add_and_score``) where
        the separate calls took ~15 numpy calls per grid value of ``first_success``. Same
        numbers, bit for bit: the same sums in the same order.

        Arguments:
            keys: int (N,) bucket keys; y: float (N,) targets; slots: ``slots(keys)``.
            y_query: float64 (T,) targets of the queries. epsilon: ε. min_count: as
                ``floor_z``.

        Returns:
            (prediction float64 (T,), empty bool (T,), |prediction − y_query| float64 (T,),
            fraction of queries with error not ≤ ε, ``floor_z(y_query, epsilon, min_count,
            among=violating & ~empty)``).

        Source: the degree-0 learner of Baykal et al. 2022, Theorem 4.1 (bucket means).
        """
        keys = np.asarray(keys, np.int64)
        y = np.asarray(y, np.float64)
        if len(keys):
            self._keys.append(keys)
            self.n_points += len(keys)
            self._y_sum += float(y.sum())
        mean = self._y_sum / self.n_points if self.n_points else math.nan
        pred, err = np.empty(len(self._inv)), np.empty(len(self._inv))
        empty = np.empty(len(self._inv), bool)
        bad, z = _add_and_score(np.asarray(slots, np.int64), y, self._count, self._sum,
                                self._sq, self._inv, np.asarray(y_query, np.float64), mean,
                                float(epsilon), int(min_count), pred, err, empty)
        return pred, empty, err, bad / len(err), z

    def n_buckets(self) -> int:
        """Distinct buckets holding a training point (the table size)."""
        if not self._keys:
            return 0
        keys = np.concatenate(self._keys)
        if keys.min() >= 0 and keys.max() < 4 * len(keys) + 1024:  # dense ids: count by bins
            return int(np.count_nonzero(np.bincount(keys)))
        return int(np.unique(keys).size)


@njit(cache=True, error_model="numpy")  # x / 0 is inf or nan, as in numpy (min_count 1)
def _add_and_score(slots, y, count, total, sq, inv, y_query, mean, epsilon, min_count,
                   pred, err, empty):
    """``BucketMeans.add_and_score``'s pass: per-bucket count, sum and sum of squares of the
    new points (each as ``np.bincount`` sums them, then added to the totals), the prediction
    (bucket mean, ``mean`` for an empty bucket; nan everywhere while ``mean`` is nan: no
    point yet), the errors, and ``floor_z`` over the violating non-empty queries. Fills
    ``pred``, ``err`` and ``empty``; returns (violating queries, floor z)."""
    n_uniq = len(count)
    add_count, add_sum, add_sq = np.zeros(n_uniq), np.zeros(n_uniq), np.zeros(n_uniq)
    for i in range(len(slots)):
        b = slots[i]
        if b >= 0:
            add_count[b] += 1.0
            add_sum[b] += y[i]
            add_sq[b] += y[i] * y[i]
    for b in range(n_uniq):
        count[b] += add_count[b]
        total[b] += add_sum[b]
        sq[b] += add_sq[b]
    no_points = math.isnan(mean)
    bad = 0
    z_max, found = -np.inf, False
    for t in range(len(inv)):
        b = inv[t]
        n = count[b]
        empty[t] = n == 0
        if no_points:
            pred[t] = np.nan
        elif n == 0:
            pred[t] = mean
        else:
            pred[t] = total[b] / n
        err[t] = abs(pred[t] - y_query[t])
        if err[t] <= epsilon:
            continue
        bad += 1
        if n == 0 or n < min_count:
            continue
        m = total[b] / n
        var = sq[b] / n - m * m
        var = (0.0 if var < 0.0 else var) * n / (n - 1)
        gap = abs(y_query[t] - m) - epsilon
        se = math.sqrt(var / n)
        if se > 0:
            z = gap / se
        else:
            z = np.inf if gap > 0 else -np.inf
        if not found or z > z_max:
            z_max, found = z, True
    return bad, (max(z_max, 0.0) if found else 0.0)


def spread_floor(query_keys, y_query, epsilon: float) -> bool:
    """True when two queries share a bucket but their targets differ by more than 2ε: no
    bucket value is then within ε of both, whatever the training sample (a certain floor)."""
    keys = np.asarray(query_keys, np.int64)
    order = np.argsort(keys, kind="stable")
    ks, ys = keys[order], np.asarray(y_query, np.float64)[order]
    starts = np.flatnonzero(np.r_[True, ks[1:] != ks[:-1]])
    spread = np.maximum.reduceat(ys, starts) - np.minimum.reduceat(ys, starts)
    return bool(spread.max() > 2 * epsilon)


@dataclass(frozen=True)
class DrawOutcome:
    """One draw's first passage.

    Attributes:
        n: first grid n (training points offered) with ℓ∞ error ≤ ε (float; inf when
            censored or at a floor).
        floor: the draw cannot reach ε whatever n: two test points of one bucket differ by
            more than 2ε, or a test point's error exceeds ε by ``floor_z`` standard errors of
            its bucket mean (``BucketMeans.floor_z``).
        n_buckets: non-empty buckets of the learner at the stop.
        error: the ℓ∞ error over the test points at the stop (inf before any point).
        violating: fraction of test points with error > ε at the stop.
        empty: fraction of test points in empty buckets at the stop.
        tail: ((n, violating fraction), ...) over the last grid values of a censored draw
            (for the extrapolation of the samples needed).
        lshtable_difference: largest |prediction − LSHTable's| at the stop (only when the
            draw was checked against ``LSHTable``; else NaN).
    """

    n: float
    n_buckets: int
    error: float
    violating: float
    empty: float
    floor: bool = False
    tail: tuple[tuple[int, float], ...] = ()
    lshtable_difference: float = math.nan


class _Stream:
    """One i.i.d. stream of input points (``inputs.sample(size, seed)`` in blocks), cut into
    consecutive disjoint pieces: the draws of a setting take their training points from it
    one after the other, so they are independent; points a draw did not use go back."""

    MIN_BLOCK = 65536  # the block size of the checks' preregistered streams (their seeds)

    def __init__(self, inputs, seed: int):
        self.inputs, self.seed = inputs, seed
        self.data = np.zeros((0, 0))
        self.pos = 0
        self.n_blocks = 0

    def take(self, n: int) -> np.ndarray:
        """The next ``n`` points, (n, dim) float64."""
        have = len(self.data) - self.pos
        if have < n:
            block = self.inputs.sample(max(self.MIN_BLOCK, n - have),
                                       seed=child_seeds(self.seed, 1, self.n_blocks)[0])
            self.n_blocks += 1
            self.data = np.concatenate([self.data[self.pos:].reshape(-1, block.shape[1]), block])
            self.pos = 0
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def give_back(self, n: int) -> None:
        """Return the last ``n`` points taken (unused) to the stream."""
        self.pos -= n


def first_success(stream, target, hasher, X_test: np.ndarray, y_test: np.ndarray,
                  epsilon: float, grid: np.ndarray, keep: float = 1.0, seed: int = 0,
                  check_lshtable: bool = False, floor_z: float = 5.0,
                  tail: int = 5) -> DrawOutcome:
    """Feed one table's bucket means nested prefixes of an i.i.d. stream and stop at the
    first grid n whose ℓ∞ test error is ≤ ε, at a floor, or at the cap.

    Arguments:
        stream: ``_Stream`` (or any object with ``take(n)`` and ``give_back(n)``).
        target: callable (N, dim) -> (N,).
        hasher: object with ``bucket_ids(X) -> (N, 1)`` int keys (one table).
        X_test, y_test: (T, dim) test points and their targets.
        epsilon: ε > 0.
        grid: increasing int counts of training points offered (the last is the cap).
        keep: probability that the learner uses an offered point (1: the theorem's learner).
        seed: seed of the thinning (unused when keep = 1).
        check_lshtable: also fit ``LSHTable(hasher, degree=0)`` on the points used and record
            the largest difference of its test predictions (``lshtable_difference``).
        floor_z: z of the statistical floor (``BucketMeans.floor_z``).
        tail: grid values kept in ``DrawOutcome.tail``.

    Returns:
        ``DrawOutcome``.
    """
    test_keys = np.asarray(hasher.bucket_ids(X_test))[:, 0]
    if spread_floor(test_keys, y_test, epsilon):
        return DrawOutcome(math.inf, 0, math.inf, 1.0, 1.0, floor=True)
    means = BucketMeans(test_keys)
    rng = np.random.default_rng(seed)
    used_X, used_y = [], []
    history = []
    offered, gi = 0, 0
    err = np.full(len(X_test), np.inf)
    pred = np.full(len(X_test), np.nan)
    empty = np.ones(len(X_test), bool)
    floor = done = False
    while gi < len(grid) and not done:
        # a block ends at a grid value, so that every point taken is used (or given back)
        reach = offered + min(int(grid[-1]) - offered, max(4096, offered))
        end = int(grid[max(int(np.searchsorted(grid, reach, side="right")) - 1, gi)])
        size = end - offered
        X = stream.take(size)
        y = target(X)
        mask = rng.random(size) < keep if keep < 1.0 else None
        keys = np.zeros(size, np.int64)  # points the learner ignores are never hashed
        keys[slice(None) if mask is None else mask] = np.asarray(
            hasher.bucket_ids(X if mask is None else X[mask]))[:, 0]
        slots = means.slots(keys)
        lo = 0
        while gi < len(grid) and grid[gi] <= offered + size:
            hi = int(grid[gi]) - offered
            part = slice(lo, hi)
            kk, yy, ss = keys[part], y[part], slots[part]
            if mask is not None:
                kk, yy, ss = kk[mask[part]], yy[mask[part]], ss[mask[part]]
            pred, empty, err, bad, z = means.add_and_score(kk, yy, ss, y_test, epsilon,
                                                           FLOOR_MIN_COUNT)
            if check_lshtable:
                used_X.append(X[part] if mask is None else X[part][mask[part]])
                used_y.append(yy)
            lo = hi
            history.append((int(grid[gi]), bad))
            gi += 1
            if bad == 0.0 or z > floor_z:
                floor, done = bad > 0.0, True
                stream.give_back(size - hi)
                break
        offered += size
    success = history and history[-1][1] == 0.0
    difference = (_lshtable_difference(hasher, used_X, used_y, X_test, pred)
                  if check_lshtable else math.nan)
    return DrawOutcome(float(history[-1][0]) if success else math.inf, means.n_buckets(),
                       float(np.max(err)), history[-1][1] if history else 1.0,
                       float(empty.mean()), floor=floor,
                       tail=() if success or floor else tuple(history[-tail:]),
                       lshtable_difference=difference)


def _lshtable_difference(hasher, used_X, used_y, X_test, pred) -> float:
    """Largest |pred − LSHTable(hasher, degree=0).fit(used).predict(X_test)| (0 if no point)."""
    X = np.concatenate(used_X) if used_X else np.zeros((0, X_test.shape[1]))
    if len(X) == 0:
        return 0.0
    reference = LSHTable(hasher, degree=0).fit(X, np.concatenate(used_y)).predict(X_test)
    return float(np.max(np.abs(reference - pred)))


def _needed_by_extrapolation(tails, n_test: int) -> float:
    """Samples at which the fraction of violating test points, extrapolated as a power law
    of n over the last grid values of the censored draws, falls below half a test point —
    a rough order of magnitude for "what would be needed" (inf when it does not fall)."""
    ns, bads = [], []
    for tail in tails:
        for n, bad in tail:
            if bad > 0:
                ns.append(float(n))
                bads.append(float(bad))
    if len(set(ns)) < 2:
        return math.nan
    fit = fit_exponent(ns, bads)  # least squares of ln bad on ln n
    slope, icpt = fit.slope, fit.intercept
    if slope >= 0:
        return math.inf
    target = math.log(0.5 / n_test)
    return float(math.exp(min((target - icpt) / slope, 700.0)))
