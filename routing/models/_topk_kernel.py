"""Fused CPU kernel of the DSM routing: φ(x) = ReLU(Bx + c) and its exact Top-K, in one pass.

The DSM mask needs every unit's activation (Baykal et al. 2022, §3: "computing σ(Bx) takes
O(nd) time"), but not the (N, width) activation matrix: this kernel computes the
pre-activations of a block of 8 rows at a time, three groups of 16 units together (float64:
two), in registers (``routing._projection.project_candidates``: the register-blocked outer
product of the hash kernels, with B as the directions and c as their offsets, so one pass
over B serves 8 rows), keeps only each row's candidates, selects its k winners among them
and writes only their indices and values, (N, k) each.

Selection (exactly k winners, equal activations won by the lowest index, the rule of
``routing.topk``): brackets around the k-th largest activation are guessed from the mean and
standard deviation over the units of this x's pre-activations (computed in O(dim²) from
precomputed moments of [B | c]; for the default Gaussian bottom layer the pre-activations of
one x are Gaussian over the units, so the guesses are usually right): a wide one
[g_lo, g_hi] and a tight inner one [g_in_lo, g_in_hi] (:func:`bracket_quantiles`).

1. The candidates z_j >= g_lo and their indices are compressed out of the projections as
   they are computed, 16 units per vector comparison (AVX-512 ``vcompress``), with no branch
   per unit; the (8, width) pre-activations are never stored. (Storing them and compressing
   each row afterwards took 0.85 ms more on 1024 × 4096 units.) With g_lo <= 0 the
   candidates are the positive units; with k = width, or when fewer than k candidates were
   found (a guess too high, or fewer than k positive units), every unit is (the block is
   projected again for such a row).
2. The k-th largest candidate t: the candidates above the inner bracket are counted, those
   inside it compressed again, and the bracket is bisected on their float bit patterns
   (positive floats order like their bits) with vectorised counting passes, then the few
   left inside are ranked among each other. If the inner guess misses, the wide one is used.
3. Candidates above t win, and candidates equal to t win in index order until there are k
   (without ties at t: one more compression of the candidates >= t).

The per-row helpers are inlined into the kernel (``inline="always"``), take the block's 2-D
arrays with a row index, and the scratch views are taken once per task: each call boundary
or row view takes and releases a reference to every array it passes (an atomic operation
each), which cost 10-15 % of the kernel on 1024 × 4096 units.

A wrong guess only widens the search (to all units in the worst case: the bracket is then
bisected on the values), never changes the result. Winners are written in increasing unit
index, as ``torch.nonzero`` of the mask would give. The inputs must be finite (the models
check them). The pre-activations are c followed by fused multiply-adds in input order, so
they may differ from ``X @ B.T + c`` in the last bits.

Reference: :func:`relu_topk_reference` (torch: addmm, ReLU, ``routing`` Top-K mask).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import torch
from numba import njit, prange

from routing._projection import (BLOCK, CANDIDATE_GROUPS, FEW, LANES, compress_in_range,
                                 count_in_range, kth_largest_of_few, min_max, pack_groups,
                                 project_candidates)
from routing._select import (bracket_margins, bracket_quantiles, kth_largest_bracketed,
                             select_winners)
from routing.torch_twins import topk_mask

from ._sparse_dot import row_dot

__all__ = ["relu_topk", "relu_topk_reference", "bottom_groups", "bracket_quantiles",
           "unit_moments"]


@njit(cache=True, inline="always")
def _kth_largest_positive(cv, m, k, guesses, q, inner, small, tmp, as_float):
    """The k-th largest of cv[:m], all > 0 and m >= k.

    guesses[q]: (g_lo, g_in_lo, g_in_hi, g_hi) from :func:`_bracket_guess` (may be wrong). The
    values >= an upper bound are only counted (c_up of them, fewer than k); the values in
    [lower, upper) are compressed into ``inner`` (the inner pair if it brackets the k-th
    largest, else [0, g_hi) or everything), and the (k - c_up)-th largest of those is found
    by their ranks among each other in registers (``kth_largest_of_few``) if there are at
    most FEW (32) of them, else by bisecting their bit patterns (positive floats order like
    their bits) with vectorised counting passes until at most 8 remain in the bracket, then
    by their ranks (those few are compressed into ``small``; bisecting only down to 32 was
    5 % slower at width 4096, k = 256).
    Scratch (max(m, FEW) + LANES,) each: inner, small; tmp (1,) integers of cv's width and
    as_float, tmp viewed as cv's dtype (row views and array arguments are taken once per
    task by the caller: each costs reference counting).
    cv is read in whole vectors (``compress_in_range``).
    """
    inf = cv.dtype.type(np.inf)
    lower, upper, c_up = cv.dtype.type(0), inf, 0
    g_in_lo, g_in_hi, g_hi = guesses[q, 1], guesses[q, 2], guesses[q, 3]
    c_in_hi = count_in_range(cv, m, g_in_hi, None) if g_in_hi < inf else 0
    if c_in_hi < k and count_in_range(cv, m, g_in_lo, None) >= k:
        lower, upper, c_up = g_in_lo, g_in_hi, c_in_hi
    elif g_hi < inf:
        count = count_in_range(cv, m, g_hi, None)
        if count < k:
            upper, c_up = g_hi, count
    n = compress_in_range(cv, m, lower, upper, 0, inner, None)
    need = k - c_up  # 1 <= need <= n
    if n <= FEW:
        return kth_largest_of_few(inner, n, need)
    low, high = min_max(inner, n)
    as_float[0] = low
    lo = tmp[0]
    as_float[0] = high
    hi = tmp[0] + 1  # invariant: count(bits >= lo) = c_lo >= need > c_hi = count(bits >= hi)
    c_lo = n
    c_hi = 0
    while hi - lo > 1 and c_lo - c_hi > 8:
        tmp[0] = lo + (hi - lo) // 2
        count = count_in_range(inner, n, as_float[0], None)
        if count >= need:
            lo, c_lo = tmp[0], count
        else:
            hi, c_hi = tmp[0], count
    if hi - lo == 1:  # only the bit pattern lo is left: it is the k-th largest
        tmp[0] = lo
        return as_float[0]
    tmp[0] = lo
    lo_value = as_float[0]
    tmp[0] = hi
    n_small = compress_in_range(inner, n, lo_value, as_float[0], 0, small, None)
    return kth_largest_of_few(small, n_small, need - c_hi)


@njit(cache=True, inline="always")
def _bracket_guess(X, r, moments, quantiles, guesses, q):
    """guesses[q, i] = mean + quantiles[i]·std of the pre-activations of row r over the units.

    X: the points (N, dim); moments: (dim + 2, dim + 1) from :func:`unit_moments`, for the
    points (x, 1); quantiles: (z_lo, z_in_lo, z_in_hi, z_hi) of :func:`bracket_quantiles`;
    guesses: (BLOCK, 4) of X's dtype, row q written. A guess below -1e30 (or NaN, std = 0
    with an infinite quantile) becomes -1e30 for the lower bounds and +inf for the upper
    ones; one above 1e30 becomes 1e30 and +inf.
    """
    dim = X.shape[1]
    mean = moments[0, dim]
    second = moments[1 + dim, dim]  # (x, 1)ᵀ S (x, 1), S = moments[1:] symmetric
    for d in range(dim):
        mean += moments[0, d] * X[r, d]
        acc = 2.0 * moments[1 + d, dim]
        for e in range(dim):
            acc += moments[1 + d, e] * X[r, e]
        second += acc * X[r, d]
    std = math.sqrt(max(second - mean * mean, 0.0))
    for i in range(4):
        g = mean + quantiles[i] * std
        if i < 2:  # lower bounds
            g = min(g, 1e30) if g > -1e30 else -1e30
        else:  # upper bounds
            g = max(g, -1e30) if g < 1e30 else np.inf
        guesses[q, i] = g


@njit(cache=True)
def _project(X, first, groups, step, thresholds, cv, cand, counts, few):
    """Every row's candidates (pre-activations >= its threshold) of one block of 8 rows;
    step: ``CANDIDATE_GROUPS[X.dtype]``; few: whether few units are expected to pass (the
    candidate stores for a low keep rate, ``project_candidates(sparse=True)``)."""
    counts[:] = 0
    if few:
        for g in range(0, groups.shape[0], step):
            project_candidates(X, first, groups, g, thresholds, cv, cand, counts, True)
    else:
        for g in range(0, groups.shape[0], step):
            project_candidates(X, first, groups, g, thresholds, cv, cand, counts, False)


@njit(cache=True, parallel=True)
def _relu_topk(X, groups, step, width, moments, k, quantiles, cols, vals, int_like, theta,
               out, n_tasks, few):
    n = X.shape[0]
    row = (groups.shape[0] + step) * LANES  # room for every unit, and whole-vector stores
    n_blocks = (n + BLOCK - 1) // BLOCK
    for task in prange(n_tasks):
        cv = np.empty((BLOCK, row), X.dtype)  # each row's candidates: values,
        cand = np.empty((BLOCK, row), np.int32)  # and unit indices
        counts = np.empty(BLOCK, np.int64)
        thresholds = np.empty(BLOCK, X.dtype)
        scratch_v = np.empty((2, row), X.dtype)
        scratch_j = np.empty(row, np.int32)
        tmp = np.empty(1, int_like.dtype)
        as_float = tmp.view(X.dtype)
        guesses = np.empty((BLOCK, 4), X.dtype)
        inner, small = scratch_v[0], scratch_v[1]
        zero = X.dtype.type(0)
        everything = X.dtype.type(-np.inf)  # the threshold that keeps every unit
        positive = np.nextafter(zero, X.dtype.type(1))  # the one that keeps z > 0
        for block in range(task * n_blocks // n_tasks, (task + 1) * n_blocks // n_tasks):
            first = block * BLOCK
            rows = min(BLOCK, n - first)
            # a row's candidates are its units >= g_lo > 0, kept as they are projected; with
            # g_lo <= 0 its positive units; with k = width all its units
            for q in range(BLOCK):
                _bracket_guess(X, first + min(q, rows - 1), moments, quantiles, guesses, q)
                thresholds[q] = (everything if k == width else
                                 guesses[q, 0] if guesses[q, 0] > zero else positive)
            _project(X, first, groups, step, thresholds, cv, cand, counts, few)
            missed = False  # a guess too high: fewer than k candidates
            for q in range(rows):
                if counts[q] < k:
                    thresholds[q] = everything
                    missed = True
            if missed:  # project the block again (rare): those rows take all their units
                _project(X, first, groups, step, thresholds, cv, cand, counts, False)
            for q in range(rows):
                r = first + q
                v = cv[q]
                if thresholds[q] > everything:  # candidates > 0: no ReLU needed
                    m = counts[q]
                    t = _kth_largest_positive(v, m, k, guesses, q, inner, small, tmp,
                                              as_float)
                else:  # every unit, in order (the zero units past the width come last)
                    m = width
                    for j in range(width):
                        v[j] = max(v[j], zero)
                    t = kth_largest_bracketed(v, m, k, zero, guesses[q, 3], min_max(v, m)[1],
                                              inner)
                select_winners(v, m, k, t, cand[q], inner, scratch_j)
                for i in range(k):
                    cols[r, i] = scratch_j[i]
                    vals[r, i] = inner[i]
                if theta.shape[0] > 0:  # the top layer, while the winners are in cache
                    out[r] = row_dot(theta, scratch_j, inner, k, zero)


def bottom_groups(B, c, dtype) -> np.ndarray:
    """[B | c] laid out for the kernel: (G, dim + 1, 16) in ``dtype``, G = ceil(width / 16)
    rounded up to a multiple of ``CANDIDATE_GROUPS[dtype]`` (3 for float32, 2 for float64:
    the kernel projects that many groups at a time).

    Arguments:
        B: (width, dim) bottom-layer weights; c: (width,) bias; any real dtype.

    The groups of ``routing._projection.pack_groups`` with [B | c] as the directions, and
    zero directions appended: c is the offset row of ``project_candidates``, which gives
    Bx + c (and 0 past the width, never a candidate). Raises nothing itself: B and c come
    from the model (the bottom layer φ(x) = σ(Bx + c) of Baykal et al. 2022, §2.1, §5.1).
    """
    W = np.concatenate([np.asarray(B), np.asarray(c)[:, None]], axis=1)
    per_call = CANDIDATE_GROUPS[np.dtype(dtype)] * LANES
    units = -(-len(W) // per_call) * per_call
    W = np.concatenate([W, np.zeros((units - len(W), W.shape[1]), W.dtype)])
    return pack_groups(W[None], dtype)


def relu_topk(X, groups, width, moments, k, quantiles, cols, vals, theta=None, out=None):
    """Write the k winners of φ(x) = max(Bx + c, 0) for every row of X.

    Arguments:
        X: (N, dim) float32 or float64, C-contiguous, finite.
        groups: ``bottom_groups(B, c, X.dtype)``.
        width: number of units (rows of B), >= 1.
        moments: (dim + 2, dim + 1) float64 from :func:`unit_moments`.
        k: winners per row, 1 <= k <= width.
        quantiles: the 4 bracket quantiles from :func:`bracket_quantiles`.
        cols: (N, k) int64, int32 or uint16 (width <= 2^16), overwritten with the winners'
            unit indices, increasing.
        vals: (N, k) X's dtype, overwritten with their activations φ_j(x).
        theta, out: optional, (width,) and (N,) of X's dtype: then also
            out[n] = Σ_i θ[cols[n, i]]·vals[n, i] (the DSM top layer without its bias,
            ``_sparse_dot.row_dot``, the same bits as ``sparse_dot``), taken for each row
            right after its selection, from the winners still in cache.

    Raises:
        ValueError: if groups does not have the shape ``bottom_groups`` gives for this X
            (the kernel reads several groups at a time and would read past the end).
    """
    step = CANDIDATE_GROUPS[X.dtype]
    if groups.ndim != 3 or len(groups) % step or groups.shape[1:] != (X.shape[1] + 1, LANES):
        raise ValueError(f"groups must be bottom_groups(B, c, {X.dtype}) of this X, got shape "
                         f"{groups.shape}")  # the kernel reads `step` groups at a time
    int_like = np.empty(0, np.int32 if X.dtype == np.float32 else np.int64)
    if theta is None:  # an empty θ: no product
        theta, out = np.empty(0, X.dtype), np.empty(0, X.dtype)
    n_blocks = (len(X) + BLOCK - 1) // BLOCK
    n_tasks = max(1, min(n_blocks, numba.get_num_threads()))  # one set of scratch per task
    # the candidate stores for a low keep rate when at most a quarter of the units are
    # expected to pass (k plus the outer bracket's margin, the candidates' threshold g_lo)
    few = 4 * (k + bracket_margins(k)[0]) <= width
    _relu_topk(X, groups, step, width, moments, k, tuple(map(float, quantiles)), cols, vals,
               int_like, theta, out, n_tasks, few)


def unit_moments(B: np.ndarray, c: np.ndarray) -> np.ndarray:
    """Moments over the units of the affine map x -> Bx + c, for the kernel's bracket guess.

    With xa = (x, 1) and W = [B | c] (width, dim + 1): row 0 is mean_j W_j (so the mean
    pre-activation is row0 · xa) and rows 1.. are Wᵀ W / width (so the mean square is
    xaᵀ (WᵀW / width) xa). Returns (dim + 2, dim + 1) float64.
    """
    W = np.concatenate([np.asarray(B, np.float64), np.asarray(c, np.float64)[:, None]], axis=1)
    return np.ascontiguousarray(np.vstack([W.mean(axis=0)[None], W.T @ W / len(W)]))


def relu_topk_reference(X: torch.Tensor, B: torch.Tensor, c: torch.Tensor, k: int):
    """Torch reference (any device): (cols, vals), (N, k) each, cols increasing per row.

    φ = ReLU(X Bᵀ + c); the winners are ``routing.torch_twins.topk_mask(φ, k)`` (exactly k,
    ties by lowest index). Differentiable in X through ``vals``.
    """
    phi = torch.relu(torch.addmm(c, X, B.T))  # (N, width)
    mask = topk_mask(phi, k)
    cols = mask.nonzero()[:, 1].reshape(X.shape[0], k)  # row-major: increasing per row
    return cols, phi.gather(1, cols)
