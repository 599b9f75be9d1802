"""Fused CPU kernel of the DSM routing: φ(x) = ReLU(Bx + c) and its exact Top-K, in one pass.

The DSM mask needs every unit's activation (Baykal et al. 2022, §3: "computing σ(Bx) takes
O(nd) time"), but not the (N, width) activation matrix: this kernel computes one row of
pre-activations into a width-sized scratch buffer that stays in cache, selects its k winners
and writes only their indices and values, (N, k) each.

Selection (exactly k winners, equal activations won by the lowest index, the rule of
``routing.topk``): a bracket [g_lo, g_hi] around the k-th largest activation is guessed from
the mean and standard deviation over the units of this x's pre-activations (computed in
O(dim²) from precomputed moments of [B | c]; for the default Gaussian bottom layer the
pre-activations of one x are Gaussian over the units, so the guess is usually right), and
checked by counting. The k-th largest value t is then found among the candidates (units
above g_lo) by bisecting the bracket with vectorised counting passes and a final quickselect;
units above t win, and units equal to t win in index order until there are k. A wrong guess
only widens the bracket (to all units in the worst case), never changes the result.

Winners are written in increasing unit index, as ``torch.nonzero`` of the mask would give.

Reference: :func:`relu_topk_reference` (torch: addmm, ReLU, ``routing`` Top-K mask).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from numba import njit, prange
from scipy.stats import norm

from routing.torch_twins import topk_mask

__all__ = ["relu_topk", "relu_topk_reference", "bracket_quantiles", "unit_moments"]

ROWS_PER_TASK = 16  # rows per parallel task (one set of scratch buffers each)


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


@njit(cache=True, parallel=True)
def relu_topk(X, BT, c, moments, k, z_lo, z_hi, cols, vals):
    """Write the k winners of φ(x) = max(Bx + c, 0) for every row of X.

    Arguments:
        X: (N, dim) float32 or float64, C-contiguous.
        BT: (dim, width) the transposed bottom-layer weights, X's dtype, C-contiguous.
        c: (width,) bottom-layer bias, X's dtype.
        moments: (dim + 2, dim + 1) float64 from :func:`unit_moments`.
        k: winners per row, 1 <= k <= width.
        z_lo, z_hi: bracket quantiles from :func:`bracket_quantiles`.
        cols: (N, k) int64, overwritten with the winners' unit indices, increasing.
        vals: (N, k) X's dtype, overwritten with their activations φ_j(x).
    """
    n, dim = X.shape
    width = c.shape[0]
    zero = X.dtype.type(0)
    for task in prange((n + ROWS_PER_TASK - 1) // ROWS_PER_TASK):
        z = np.empty(width, X.dtype)
        cand = np.empty(width + 1, np.int64)  # + 1: branch-free compactions write one past
        cv = np.empty(width, X.dtype)
        small = np.empty(width + 1, X.dtype)
        out_j = np.empty(width + 1, np.int64)
        out_v = np.empty(width + 1, X.dtype)
        xa = np.empty(dim + 1)
        for r in range(task * ROWS_PER_TASK, min(n, (task + 1) * ROWS_PER_TASK)):
            for j in range(width):
                z[j] = c[j]
            for d in range(dim):
                xd = X[r, d]
                b = BT[d]
                for j in range(width):
                    z[j] += xd * b[j]
            # mean and variance over the units of this x's pre-activations, in O(dim²)
            for d in range(dim):
                xa[d] = X[r, d]
            xa[dim] = 1.0
            mean = 0.0
            second = 0.0
            for d in range(dim + 1):
                mean += moments[0, d] * xa[d]
                acc = 0.0
                for e in range(dim + 1):
                    acc += moments[1 + d, e] * xa[e]
                second += acc * xa[d]
            std = math.sqrt(max(second - mean * mean, 0.0))
            # the guessed bracket, in X's dtype (no conversions in the scans; any guess is safe)
            lo_guess = mean + z_lo * std
            hi_guess = mean + z_hi * std
            if not lo_guess > -1e30:  # also NaN (std = 0 with an infinite quantile)
                lo_guess = -1e30
            if not hi_guess < 1e30:
                hi_guess = np.inf
            g_lo = X.dtype.type(min(lo_guess, 1e30))
            g_hi = X.dtype.type(max(hi_guess, -1e30))
            # candidates: units with φ_j >= g_lo, in index order (all units if g_lo <= 0)
            m = 0
            if g_lo > zero and k < width:
                for j in range(width):
                    cand[m] = j
                    m += z[j] >= g_lo
            if m < k:  # a wrong guess (or a trivial one): every unit is a candidate
                m = width
                g_lo = zero
                for j in range(width):
                    cand[j] = j
            for q in range(m):
                cv[q] = max(z[cand[q]], zero)
            # t = k-th largest activation; winners: all values > t, then values == t in index
            # order until there are k
            t = _kth_largest_bracketed(cv, m, k, g_lo, g_hi, small)
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
                cols[r, q] = out_j[q]
                vals[r, q] = out_v[q]


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
