"""Fused CPU kernel of the DSM routing: φ(x) = ReLU(Bx + c) and its exact Top-K, in one pass.

The DSM mask needs every unit's activation (Baykal et al. 2022, §3: "computing σ(Bx) takes
O(nd) time"), but not the (N, width) activation matrix: this kernel computes the
pre-activations of a block of 8 rows at a time into a scratch buffer that stays in cache
(``routing._projection.project_block``: the register-blocked outer product of the hash
kernels, with [B | c] as the directions and (x, 1) as the points, so one pass over B serves
8 rows), selects each row's k winners and writes only their indices and values, (N, k) each.

Selection (exactly k winners, equal activations won by the lowest index, the rule of
``routing.topk``): a bracket [g_lo, g_hi] around the k-th largest activation is guessed from
the mean and standard deviation over the units of this x's pre-activations (computed in
O(dim²) from precomputed moments of [B | c]; for the default Gaussian bottom layer the
pre-activations of one x are Gaussian over the units, so the guess is usually right).

1. The candidates z_j >= g_lo are read off 64-bit masks (four vector comparisons,
   ``routing._projection.ge_mask``) with trailing-zero counts, with no branch per unit.
2. The k-th largest candidate t is found by bisecting the bracket on the candidates' float
   bit patterns (positive floats order like their bits) with vectorised counting passes,
   then a quickselect among the few candidates left inside.
3. Candidates above t win, and candidates equal to t win in index order until there are k.

A wrong guess only widens the search (to all units in the worst case: the bracket is then
bisected on the values), never changes the result. Winners are written in increasing unit
index, as ``torch.nonzero`` of the mask would give. The inputs must be finite (the models
check them). The pre-activations are sums of fused multiply-adds in input order, so they may
differ from ``X @ B.T + c`` in the last bits.

Reference: :func:`relu_topk_reference` (torch: addmm, ReLU, ``routing`` Top-K mask).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros
from scipy.stats import norm

from routing._projection import BLOCK, LANES, ge_mask, pack_groups, project_block
from routing.torch_twins import topk_mask

__all__ = ["relu_topk", "relu_topk_reference", "bottom_groups", "bracket_quantiles",
           "unit_moments"]

BLOCKS_PER_TASK = 2  # blocks of BLOCK rows per parallel task (one set of scratch buffers each)


def bracket_quantiles(width: int, k: int) -> tuple[float, float]:
    """Standard-normal quantiles (z_lo, z_hi) whose tails hold k ± 4·sqrt(k) of width units.

    The kernel guesses g = mean + z·std for the row; 4 binomial standard deviations of margin
    make a failed guess rare for Gaussian rows (a failure costs a wider bracket, not a wrong
    answer).
    """
    margin = 4.0 * math.sqrt(k) + 2.0
    p_lo = min((k + margin) / width, 1.0)
    p_hi = max((k - margin) / width, 0.0)
    z_lo = -np.inf if p_lo >= 1.0 else float(norm.isf(p_lo))
    z_hi = np.inf if p_hi <= 0.0 else float(norm.isf(p_hi))
    return z_lo, z_hi


@njit(cache=True)
def _kth_largest(a, n, m):
    """The m-th largest (1-based) of a[:n]; reorders a[:n]. Iterative quickselect."""
    target = m - 1  # position in descending order
    lo = 0
    hi = n - 1
    while hi > lo:
        mid = (lo + hi) // 2
        x, y, z = a[lo], a[mid], a[hi]  # median of three as the pivot
        if x < y:
            x, y = y, x
        if y < z:
            y, z = z, y
            if x < y:
                x, y = y, x
        pivot = y
        i = lo
        j = hi
        while i <= j:  # Hoare partition, descending: a[lo:i] >= pivot >= a[j+1:hi+1]
            while a[i] > pivot:
                i += 1
            while a[j] < pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if target <= j:
            hi = j
        elif target >= i:
            lo = i
        else:
            return a[target]
    return a[target]


@njit(cache=True)
def _count_ge(v, n, x):
    s = 0
    for q in range(n):
        s += v[q] >= x
    return s


@njit(cache=True)
def _kth_largest_bracketed(v, n, k, lo, hi, small):
    """The k-th largest of v[:n], given count(v >= lo) >= k (hi: a guess, may be +inf).

    Bisects [lo, hi) with vectorised counting passes until few values remain inside, then
    selects among those with a quickselect (``small``: scratch of size >= n).
    """
    c_lo = _count_ge(v, n, lo)
    c_hi = _count_ge(v, n, hi)
    if c_hi >= k or not hi == hi:  # the guess was too low (or NaN): no upper bound
        hi = v.dtype.type(np.inf)
        c_hi = 0
    top = lo
    for q in range(n):
        top = max(top, v[q])
    for _ in range(64):
        if c_lo - c_hi <= 16:
            break
        mid = lo + (min(hi, top) - lo) / 2
        if mid <= lo or mid >= hi:
            break  # no float left between lo and hi: the values inside are all equal
        c_mid = _count_ge(v, n, mid)
        if c_mid >= k:
            lo, c_lo = mid, c_mid
        else:
            hi, c_hi = mid, c_mid
    m = 0
    for q in range(n):  # branch-free compaction of lo <= v < hi
        small[m] = v[q]
        m += (v[q] >= lo) & (v[q] < hi)
    return _kth_largest(small, m, k - c_hi)


@njit(cache=True)
def _candidates(z, n_words, g, cand):
    """Write the indices j < 64·n_words with z[j] >= g to ``cand``, increasing; return how many.

    z: 1-D, C-contiguous, length >= 64·n_words.
    """
    m = 0
    one = np.uint64(1)
    for w in range(n_words):
        base = 64 * w
        mask = np.uint64(ge_mask(z, base, g) | (ge_mask(z, base + 16, g) << 16)
                         | (ge_mask(z, base + 32, g) << 32) | (ge_mask(z, base + 48, g) << 48))
        while mask != 0:
            cand[m] = base + np.int64(trailing_zeros(mask))
            m += 1
            mask &= mask - one
    return m


@njit(cache=True)
def _kth_largest_positive(cv, bits, m, k, g_hi, tmp, small):
    """The k-th largest of cv[:m], all > 0 and m >= k, by bisection on the bit patterns.

    ``bits`` is ``cv`` viewed as integers of the same size (positive floats order like their
    bits), ``tmp`` a (1,) integer scratch, ``small`` a float scratch of size >= m. g_hi (a
    guess, may be wrong or +inf) starts the bisection if fewer than k candidates reach it.
    """
    lo = bits[0]
    hi = bits[0]
    for q in range(m):
        lo = min(lo, bits[q])
        hi = max(hi, bits[q])
    hi += 1  # invariant: count(bits >= lo) = c_lo >= k > c_hi = count(bits >= hi)
    c_lo = m
    c_hi = 0
    as_float = tmp.view(cv.dtype)
    if g_hi < np.inf:
        as_float[0] = g_hi
        guess = tmp[0]
        if lo < guess < hi:
            count = _count_ge(bits, m, guess)
            if count < k:
                hi, c_hi = guess, count
    while hi - lo > 1 and c_lo - c_hi > 8:
        mid = lo + (hi - lo) // 2
        count = _count_ge(bits, m, mid)
        if count >= k:
            lo, c_lo = mid, count
        else:
            hi, c_hi = mid, count
    if hi - lo == 1:  # only the bit pattern lo is left: it is the k-th largest
        tmp[0] = lo
        return as_float[0]
    n_small = 0
    for q in range(m):  # branch-free compaction of lo <= bits < hi
        small[n_small] = cv[q]
        n_small += (bits[q] >= lo) & (bits[q] < hi)
    return _kth_largest(small, n_small, k - c_hi)


@njit(cache=True)
def _bracket_guess(Xa, r, moments, z_lo, z_hi):
    """(g_lo, g_hi) = mean ± quantile·std of the pre-activations of row r over the units.

    Xa: the points (x, 1), (N, dim + 1).
    """
    xa = Xa[r]
    mean = 0.0
    second = 0.0
    for d in range(xa.shape[0]):
        mean += moments[0, d] * xa[d]
        acc = 0.0
        for e in range(xa.shape[0]):
            acc += moments[1 + d, e] * xa[e]
        second += acc * xa[d]
    std = math.sqrt(max(second - mean * mean, 0.0))
    lo_guess = mean + z_lo * std
    hi_guess = mean + z_hi * std
    if not lo_guess > -1e30:  # also NaN (std = 0 with an infinite quantile)
        lo_guess = -1e30
    if not hi_guess < 1e30:
        hi_guess = np.inf
    return Xa.dtype.type(min(lo_guess, 1e30)), Xa.dtype.type(max(hi_guess, -1e30))


@njit(cache=True)
def _row_winners(z, width, k, g_lo, g_hi, cand, bits, tmp, small, out_j, out_v, cols_r, vals_r):
    """Write the k winners of φ = max(z[:width], 0) to cols_r and vals_r.

    z: the row's pre-activations, padded with zeros to a multiple of 64. Scratch: cand, out_j
    (len(z) + 1,) int64; bits (len(z),) integers of z's size; tmp (1,) of the same integers;
    small, out_v (len(z) + 1,) of z's dtype (+ 1: branch-free compactions write one past the
    end).
    """
    zero = z.dtype.type(0)
    cv = bits.view(z.dtype)
    m = 0
    if g_lo > zero and k < width:  # the zero padding is never a candidate
        m = _candidates(z, z.shape[0] // 64, g_lo, cand)
    if m < k:  # a wrong guess (or a trivial one): every unit is a candidate
        m = width
        for j in range(width):
            cand[j] = j
            cv[j] = max(z[j], zero)
        t = _kth_largest_bracketed(cv, m, k, zero, g_hi, small)
    else:
        for q in range(m):
            cv[q] = z[cand[q]]  # >= g_lo > 0: the ReLU changes nothing
        t = _kth_largest_positive(cv, bits, m, k, g_hi, tmp, small)
    # winners: all values > t, then values == t in index order until there are k
    n_greater = 0
    for q in range(m):
        n_greater += cv[q] > t
    n_equal = k - n_greater
    out = 0
    seen_equal = 0
    for q in range(m):  # branch-free compaction of the winners
        v = cv[q]
        is_equal = v == t
        out_j[out] = cand[q]
        out_v[out] = v
        out += (v > t) | (is_equal & (seen_equal < n_equal))
        seen_equal += is_equal
    for q in range(k):
        cols_r[q] = out_j[q]
        vals_r[q] = out_v[q]


@njit(cache=True, parallel=True)
def _relu_topk(Xa, groups, width, moments, k, z_lo, z_hi, cols, vals, int_like):
    n = Xa.shape[0]
    padded = (width + 63) // 64 * 64
    n_blocks = (n + BLOCK - 1) // BLOCK
    for task in prange((n_blocks + BLOCKS_PER_TASK - 1) // BLOCKS_PER_TASK):
        z = np.zeros((BLOCK, padded), Xa.dtype)  # columns past the groups stay 0
        cand = np.empty(padded + 1, np.int64)
        out_j = np.empty(padded + 1, np.int64)
        bits = np.empty(padded, int_like.dtype)
        tmp = np.empty(1, int_like.dtype)
        small = np.empty(padded + 1, Xa.dtype)
        out_v = np.empty(padded + 1, Xa.dtype)
        for block in range(task * BLOCKS_PER_TASK, min(n_blocks, (task + 1) * BLOCKS_PER_TASK)):
            first = block * BLOCK
            for g in range(groups.shape[0]):
                project_block(Xa, first, groups, g, z, g * LANES)
            for q in range(min(BLOCK, n - first)):
                r = first + q
                lo, hi = _bracket_guess(Xa, r, moments, z_lo, z_hi)
                _row_winners(z[q], width, k, lo, hi, cand, bits, tmp, small, out_j, out_v,
                             cols[r], vals[r])


def bottom_groups(B, c, dtype) -> np.ndarray:
    """[B | c] laid out for the kernel: (ceil(width / 16), dim + 1, 16) in ``dtype``.

    Arguments:
        B: (width, dim) bottom-layer weights; c: (width,) bias; any real dtype.

    The groups of ``routing._projection.pack_groups`` with [B | c] as the directions: the
    kernel projects (x, 1) on them, which gives Bx + c. Raises nothing itself: B and c come
    from the model (the bottom layer φ(x) = σ(Bx + c) of Baykal et al. 2022, §2.1, §5.1).
    """
    W = np.concatenate([np.asarray(B), np.asarray(c)[:, None]], axis=1)
    return pack_groups(W[None], dtype)


def relu_topk(X, groups, width, moments, k, z_lo, z_hi, cols, vals):
    """Write the k winners of φ(x) = max(Bx + c, 0) for every row of X.

    Arguments:
        X: (N, dim) float32 or float64, C-contiguous, finite.
        groups: ``bottom_groups(B, c, X.dtype)``.
        width: number of units (rows of B), >= 1.
        moments: (dim + 2, dim + 1) float64 from :func:`unit_moments`.
        k: winners per row, 1 <= k <= width.
        z_lo, z_hi: bracket quantiles from :func:`bracket_quantiles`.
        cols: (N, k) int64, overwritten with the winners' unit indices, increasing.
        vals: (N, k) X's dtype, overwritten with their activations φ_j(x).
    """
    int_like = np.empty(0, np.int32 if X.dtype == np.float32 else np.int64)
    Xa = np.empty((X.shape[0], X.shape[1] + 1), X.dtype)  # the points (x, 1)
    Xa[:, :-1] = X
    Xa[:, -1] = 1
    _relu_topk(Xa, groups, width, moments, k, z_lo, z_hi, cols, vals, int_like)


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
