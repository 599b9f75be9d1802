"""Numba helpers that find the k-th largest value of a row and its winners: a quickselect, a
bisection with vectorised counting passes (``routing._projection.count_in_range``) that
narrows a bracket before ranking the few values left (in registers:
``routing._projection.kth_largest_of_few``), the normal quantiles that guess the
bracket, and the compaction of the winners. Shared by the DSM Top-K kernel
(``routing.models._topk_kernel``) and the hidden-unit routers' k-winner-take-all
(``routing.layers._unit_kernel``); called from other Numba functions only.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit
from scipy.special import ndtri

from routing._projection import (FEW, compress_in_range, count_in_range, kth_largest_of_few,
                                 min_max)

__all__ = ["bracket_margins", "bracket_quantiles", "kth_largest", "kth_largest_bracketed",
           "kth_largest_guessed", "mean_std", "select_winners", "write_winners"]


def bracket_margins(k: int) -> tuple[float, float]:
    """(outer, inner): how many units beyond k the guessed brackets leave on each side of the
    k-th largest, 4·sqrt(k) + 2 and 1.5·sqrt(k) + 2 (see :func:`bracket_quantiles`)."""
    return 4.0 * math.sqrt(k) + 2.0, 1.5 * math.sqrt(k) + 2.0


@functools.lru_cache(maxsize=256)
def bracket_quantiles(width: int, k: int) -> tuple[float, float, float, float]:
    """Standard-normal quantiles (z_lo, z_in_lo, z_in_hi, z_hi) for guesses of brackets
    around the k-th largest of ``width`` values.

    The kernels guess g = mean + z·std for each row (right when the row's values look
    Gaussian, e.g. random projections; a wrong guess costs time, never the answer). The outer
    pair's tails hold k ± (4·sqrt(k) + 2) of the width units: 4 binomial standard deviations
    of margin make a failed outer guess rare for Gaussian rows. The inner pair,
    k ± (1.5·sqrt(k) + 2), brackets the k-th largest tightly so that few candidates are left
    to select among; when it misses, the outer pair is used.
    Infinite quantiles stand for "no bound".
    """
    def z(units):
        p = units / width
        return -np.inf if p >= 1.0 else np.inf if p <= 0.0 else -float(ndtri(p))

    outer, inner = bracket_margins(k)
    return z(k + outer), z(k + inner), z(k - inner), z(k - outer)


@njit(cache=True, fastmath={"reassoc", "contract"})
def mean_std(v, n):
    """Mean and (population) standard deviation of v[:n], n >= 1: the moments from which the
    kernels guess their brackets. One pass of sums of d and d² for d = v - v[0] (the shift
    keeps E[d²] - E[d]² from cancelling unless the mean is many spreads away from v[0]; the
    two-pass form took 2.5x the time), reassociated, so vectorised. A NaN or infinite value
    makes both NaN or infinite. Not inlined on purpose: Numba compiles inlined code with the
    caller's fastmath flags, and without reassociation the sums are serial chains
    (kwta_scores ran 2x slower)."""
    shift = v[0]
    total, squares = v.dtype.type(0), v.dtype.type(0)
    for q in range(n):
        d = v[q] - shift
        total += d
        squares += d * d
    mean = total / n
    return shift + mean, np.sqrt(max(squares / n - mean * mean, v.dtype.type(0)))


@njit(cache=True)
def kth_largest(a, n, m):
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


@njit(cache=True, inline="always")
def kth_largest_bracketed(v, n, k, lo, hi, top, small):
    """The k-th largest of v[:n] (finite values), given count(v >= lo) >= k, hi a guess of an
    upper bound (may be +inf or wrong) and top = max(v[:n]).

    Bisects [lo, hi) with vectorised counting passes until at most FEW (32) values remain
    inside (or no float is left between the bounds: ties), compresses those into ``small``
    and ranks them in registers (``kth_largest_of_few``; a quickselect if ties left more).
    v is read in whole vectors (``count_in_range``). Scratch: ``small`` of v's dtype,
    max(n, FEW) + LANES entries.
    """
    # every bound in v's dtype: a float64 midpoint between float32 values would be rounded
    # by the counting passes but not by the final compaction, and the two would disagree
    lo, hi, half = v.dtype.type(lo), v.dtype.type(hi), v.dtype.type(0.5)
    c_lo = count_in_range(v, n, lo, None)
    c_hi = count_in_range(v, n, hi, None)
    if c_hi >= k or not hi == hi:  # the guess was too low (or NaN): no upper bound
        hi = v.dtype.type(np.inf)
        c_hi = 0
    for _ in range(64):
        if c_lo - c_hi <= FEW:
            break
        mid = lo + (min(hi, top) - lo) * half
        if mid <= lo or mid >= hi:
            break  # no float left between lo and hi: the values inside are all equal
        c_mid = count_in_range(v, n, mid, None)
        if c_mid >= k:
            lo, c_lo = mid, c_mid
        else:
            hi, c_hi = mid, c_mid
    m = compress_in_range(v, n, lo, hi, 0, small, None)
    if m <= FEW:
        return kth_largest_of_few(small, m, k - c_hi)
    return kth_largest(small, m, k - c_hi)


@njit(cache=True, inline="always")
def kth_largest_guessed(v, n, k, mean, std, quantiles, inner, small):
    """The k-th largest of v[:n] (finite values, 1 <= k <= n), from brackets guessed at
    mean + z·std with the quantiles (z_lo, z_in_lo, z_in_hi, z_hi) of
    :func:`bracket_quantiles` (a wrong guess costs time, never the answer; mean and std may
    be NaN or infinite).

    The inner pair first, in two passes over v: the values >= g_in_hi are counted (c_hi of
    them) and those in [g_in_lo, g_in_hi) compressed into ``inner``; when they bracket the
    k-th largest, it is the (k - c_hi)-th largest of the few in ``inner``, ranked in registers
    (``kth_largest_of_few``) when there are at most FEW (32) of them. Otherwise the outer
    pair narrows a bisection over all of v (:func:`kth_largest_bracketed`). Scratch: inner
    and small of v's dtype, max(n, FEW) + LANES entries each; v is read in whole vectors.
    """
    z_lo, z_in_lo, z_in_hi, z_hi = quantiles
    inf = v.dtype.type(np.inf)
    g_in_lo = v.dtype.type(mean + z_in_lo * std)
    g_in_hi = v.dtype.type(mean + z_in_hi * std)
    if g_in_lo < g_in_hi:  # False for NaN guesses and a zero spread
        c_hi = count_in_range(v, n, g_in_hi, None)
        if c_hi < k:
            m = compress_in_range(v, n, g_in_lo, g_in_hi, 0, inner, None)
            if c_hi + m >= k:
                if m <= FEW:
                    return kth_largest_of_few(inner, m, k - c_hi)
                low, top = min_max(inner, m)
                return kth_largest_bracketed(inner, m, k - c_hi, low, inf, top, small)
    lo, top = min_max(v, n)
    g_lo = v.dtype.type(mean + z_lo * std)
    if g_lo > lo and count_in_range(v, n, g_lo, None) >= k:
        lo = g_lo
    return kth_largest_bracketed(v, n, k, lo, mean + z_hi * std, top, small)


@njit(cache=True, inline="always")
def select_winners(v, n, k, t, index, out_v, out_j):
    """Write the k winners of v[:n] given its k-th largest value t: every value > t, then
    values equal to t in order until there are k (ties won by the earliest), in their order
    in v. out_v gets the values, out_j ``index[q]`` of each winner q (index: 1-D int32).

    Without a tie at t (the usual case) one compression of the values >= t
    (``compress_in_range``); otherwise a branch-free compaction. out_v and out_j need
    n + LANES entries; v and index are read in whole vectors. Returns the number of values
    >= t (k, or more with ties at t).
    """
    n_at_least = count_in_range(v, n, t, None)
    write_winners(v, n, k, t, n_at_least, index, out_v, out_j)
    return n_at_least


@njit(cache=True, inline="always")
def write_winners(v, n, k, t, n_at_least, index, out_v, out_j):
    """:func:`select_winners` given the number of values >= t, n_at_least (for callers
    that counted them already)."""
    if n_at_least == k:
        compress_in_range(v, n, t, None, index, out_v, out_j)
        return
    n_equal = k - (n_at_least - _count_equal(v, n, t))
    out = 0
    seen_equal = 0
    for q in range(n):
        x = v[q]
        is_equal = x == t
        out_j[out] = index[q]
        out_v[out] = x
        out += (x > t) | (is_equal & (seen_equal < n_equal))
        seen_equal += is_equal


@njit(cache=True)
def _count_equal(v, n, x):
    s = 0
    for q in range(n):
        s += v[q] == x
    return s
