"""Hamming-space quantities of SDM: ball volume, expected neurons, cosine ↔ Hamming, SNR radius."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from scipy import stats

from routing.validation import check_bool, check_int
from routing.sdm._checks import check_cosine, check_hamming, check_weighting
from routing.sdm._intersection import (_LOG_FLOAT_TINY, _MODES, MAX_FLOAT_N,
                                       _log_intersection_curve, check_kernel_work,
                                       circle_intersection)

__all__ = [
    "space_fraction",
    "expected_neurons_in_intersection",
    "hamming_to_cosine",
    "cosine_to_hamming",
    "snr_optimal_radius",
]


def space_fraction(n, d, exact=False, log=False):
    """Fraction of {0,1}^n within Hamming radius ``d`` of a point: P(Binomial(n, 1/2) <= d).

    The probability that a random address activates a given neuron (Kanerva 1988:
    for n = 1000 and d = 451 about 0.001 of the space lies within the radius).

    Arguments:
        n: address length in bits, int >= 1.
        d: Hamming radius, int in [0, n].
        exact: return a ``fractions.Fraction`` (sum_{k<=d} C(n, k) / 2^n).
        log: return the natural log (float); finite for n up to 10^4 and beyond.

    Returns:
        float in (0, 1] (or its log, or a Fraction). Computed as the circle intersection at
        d_v = 0 divided by 2^n, so it shares that kernel's accuracy (relative error < 1e-12).

    Raises:
        ValueError: for n < 1, d outside [0, n] or not an integer, ``exact`` or ``log`` not a
            bool, ``exact`` and ``log`` both set, or ``log=False`` when the value underflows float64 (use ``log=True``).
    """
    n = check_int(n, "n", 1, None)
    d = check_int(d, "d", 0, n)
    exact, log = check_bool(exact, "exact"), check_bool(log, "log")
    if exact and log:
        raise ValueError("exact and log cannot both be True")
    if exact:
        return Fraction(circle_intersection(n, d, 0, exact=True), 2**n)
    value = circle_intersection(n, d, 0, log=True) - n * math.log(2.0)
    if log:
        return value
    if value < _LOG_FLOAT_TINY:
        raise ValueError(f"log must be True for n={n}, d={d}: the fraction exp({value:.1f}) underflows float64")
    return math.exp(value)


def expected_neurons_in_intersection(n, d, d_v, r, weighting="binary", beta=None, log=False):
    """Expected (weighted) number of r random neurons in both circles: r · I(d_v) / 2^n.

    With r neuron addresses drawn uniformly from {0,1}^n, each lies in the intersection of the
    query's and the pattern's circles with probability I(d_v) / 2^n (Kanerva 1988;
    Bricken et al. 2023, App. A.7, Eqs. 6-9 for I and its weightings).

    Arguments:
        n, d, d_v, weighting, beta: as in :func:`circle_intersection` (``d_v`` int or int array).
        r: number of neurons, int >= 1.
        log: return the natural log.

    Returns:
        float64 (a Python float for scalar ``d_v``, else an ndarray of ``d_v``'s shape): the
        expected number of neurons (weighted by w for non-binary weightings); 0 (log: -inf)
        where d_v > 2d.

    Raises:
        ValueError: for bad n, d, d_v, weighting or β (see :func:`circle_intersection`),
            r < 1, ``log`` not a bool, or ``log=False`` when a non-zero value underflows float64.
    """
    n = check_int(n, "n", 1, None)
    d = check_int(d, "d", 0, n)
    r = check_int(r, "r", 1, None)
    dvs, scalar = check_hamming(d_v, "d_v", n)
    weighting, beta = check_weighting(weighting, beta)
    log = check_bool(log, "log")
    check_kernel_work(n, d, dvs)
    logs = _log_intersection_curve(n, d, np.ascontiguousarray(dvs.ravel()), _MODES[weighting],
                                   0.0 if beta is None else beta).reshape(dvs.shape)
    logs = logs + (math.log(r) - n * math.log(2.0))
    if not log:
        finite = np.isfinite(logs)
        if np.any(logs[finite] < _LOG_FLOAT_TINY):
            raise ValueError(f"log must be True for n={n}, d={d}: some expected counts underflow float64")
        logs = np.exp(logs)
    return float(logs) if scalar else logs


def hamming_to_cosine(d_v, n):
    """Cosine similarity 1 - 2 d_v / n of two ±1 vectors of length n at Hamming distance d_v.

    Source: Bricken & Pehlevan 2021 (cosine ↔ Hamming map of SDM), Bricken et al. 2023, §3.

    Arguments:
        d_v: Hamming distance, int in [0, n] or an integer array.
        n: vector length, int >= 1.

    Returns:
        float64 in [-1, 1] (Python float, or ndarray of ``d_v``'s shape).

    Raises:
        ValueError: for n < 1 or d_v outside [0, n] or not integral.
    """
    n = check_int(n, "n", 1, None)
    dvs, scalar = check_hamming(d_v, "d_v", n)
    out = 1.0 - 2.0 * dvs / n
    return float(out) if scalar else out


def cosine_to_hamming(cosine, n):
    """Hamming distance n (1 - cosine) / 2 matching a cosine similarity; inverse of hamming_to_cosine.

    Arguments:
        cosine: float in [-1, 1] or an array of them.
        n: vector length, int >= 1.

    Returns:
        float64 in [0, n] (not rounded: an integer exactly when the cosine is one of the
        n + 1 values 1 - 2k/n).

    Raises:
        ValueError: for n < 1 or a cosine outside [-1, 1].
    """
    n = check_int(n, "n", 1, None)
    cos, scalar = check_cosine(cosine, "cosine")
    out = n * (1.0 - cos) / 2.0
    return float(out) if scalar else out


def snr_optimal_radius(n, r, m):
    """Hamming radius maximising the signal-to-noise ratio of one SDM read (Kanerva 1993).

    Kanerva (1993, "Sparse distributed memory and related models") shows that with r hard
    locations (neurons) and m stored patterns the SNR of a read is maximal when a fraction
    p* = (2 m r)^(-1/3) of the space is activated. The radius returned is the smallest d with
    space_fraction(n, d) >= p*: found by bisection on d with the log of the binomial CDF
    (``scipy.stats.binom.logcdf``, the log-space kernel where it underflows), and decided in
    exact rational arithmetic wherever the float comparison is within 1e-9 of a tie.

    Arguments:
        n: address length in bits, int in [1, 10^8] (``MAX_FLOAT_N``: the radius search may
            need the O(n) intersection kernel).
        r: number of neurons, int >= 1.
        m: number of stored patterns, int >= 1.

    Returns:
        int d* in [0, n].

    Raises:
        ValueError: for n, r or m not integers >= 1, or n above 10^8.
    """
    n = check_int(n, "n", 1, MAX_FLOAT_N)  # a radius whose fraction underflows needs the
    r = check_int(r, "r", 1, None)  # O(n) intersection kernel
    m = check_int(m, "m", 1, None)
    log_p = -(math.log(2) + math.log(m) + math.log(r)) / 3.0  # exact ints: no overflow
    p_star = (2.0 * m * r) ** (-1.0 / 3.0) if log_p > -236.0 else math.exp(log_p)  # 2mr < 1e308
    if p_star > 0:
        log_p = math.log(p_star)  # the comparisons below are with this float p*

    def reaches(d: int) -> bool:  # space_fraction(n, d) >= p*
        log_fraction = float(stats.binom.logcdf(d, n, 0.5))  # O(1): an incomplete beta
        if not math.isfinite(log_fraction):  # underflow: the O(n) log-space kernel
            log_fraction = circle_intersection(n, d, 0, log=True) - n * math.log(2.0)
        gap = log_fraction - log_p
        if abs(gap) > 1e-9:
            return gap > 0
        # exact: compare C(n, 0) + ... + C(n, d) with p* 2^n (the count first: it refuses an
        # n too large for exact integers before 2^n is formed)
        count = circle_intersection(n, d, 0, exact=True)
        return count >= Fraction(p_star) * 2**n

    lo, hi = 0, n  # reaches(n) holds: the whole space has fraction 1 >= p*
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reaches(mid) else (mid + 1, hi)
    return lo
