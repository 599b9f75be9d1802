"""Validators of the circle-intersection formula: brute-force enumeration and Monte Carlo neurons."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy import stats

from routing.validation import check_int, check_real, check_seed
from routing.sdm._checks import check_weighting
from routing.sdm._weighting import _weight

__all__ = ["brute_force_intersection", "monte_carlo_intersection", "MonteCarloIntersection"]

_BRUTE_FORCE_MAX_N = 16
_CHUNK = 1 << 16  # neurons sampled per batch: bounds memory, fixed so results depend on seed only
#: The most 64-bit words ``monte_carlo_intersection`` samples (r neurons of ⌈n/64⌉ words
#: each): 2^30 words take about 10 s of one core (2^24 took 0.13 s); larger r is refused up
#: front rather than left running for hours (r = 10^13 would take about a day).
MAX_SAMPLED_WORDS = 2**30
#: The most words sampled at once (32 MiB): the batch of neurons shrinks for long addresses,
#: and an address longer than this (n > 2^28 bits) is refused.
_CHUNK_WORDS = 2**22


def brute_force_intersection(n, d, d_v, weighting="binary", beta=None):
    """I(d_v) by enumerating all 2^n points of {0,1}^n (n <= 16); a check of circle_intersection.

    The query is the all-zeros address and the pattern has its first ``d_v`` bits set; every
    point within Hamming radius ``d`` of both is counted with its weight from Bricken et al.
    2023, App. A.7 (Eq. 7 binary, Eq. 8 linear, Eq. 9 exponential).

    Arguments:
        n: address length, int in [1, 16].
        d: Hamming radius, int in [0, n].
        d_v: distance between the centres, int in [0, n].
        weighting, beta: as in :func:`circle_intersection`.

    Returns:
        ``int`` (binary), ``fractions.Fraction`` (linear) or ``float`` (exponential, summed
        with ``math.fsum``).

    Raises:
        ValueError: for n outside [1, 16], d or d_v outside [0, n] or not integers, a bad
            weighting or β.
    """
    n = check_int(n, "n", 1, _BRUTE_FORCE_MAX_N)
    d = check_int(d, "d", 0, n)
    d_v = check_int(d_v, "d_v", 0, n)
    weighting, beta = check_weighting(weighting, beta)
    points = np.arange(2**n, dtype=np.uint32)  # (2^n,) every address as an integer
    x_q = np.bitwise_count(points).astype(np.int64)
    x_p = np.bitwise_count(points ^ np.uint32((1 << d_v) - 1)).astype(np.int64)
    inside = (x_q <= d) & (x_p <= d)
    if weighting == "binary":
        return int(inside.sum())
    if weighting == "linear":
        return Fraction(int(((n - x_q[inside]) * (n - x_p[inside])).sum()), n * n)
    return math.fsum(_weight(weighting, n, x_q[inside], x_p[inside], beta).tolist())


@dataclass(frozen=True)
class MonteCarloIntersection:
    """Result of :func:`monte_carlo_intersection`.

    Attributes:
        estimate: estimated I(d_v) / 2^n (the weighted fraction of the space in both circles).
        ci_low, ci_high: confidence interval for I(d_v) / 2^n at level ``confidence``.
        hits: number of sampled neurons inside both circles.
        r: number of sampled neurons.
        confidence: the confidence level of the interval.
    """

    estimate: float
    ci_low: float
    ci_high: float
    hits: int
    r: int
    confidence: float

    def contains(self, fraction: float) -> bool:
        """Whether ``fraction`` (e.g. circle_intersection(...) / 2**n) lies in the interval.

        Raises:
            ValueError: if ``fraction`` is not a real number in [0, 1] (a weighted fraction
                of the space: every weight is at most 1).
        """
        fraction = check_real(fraction, "fraction", 0.0, 1.0)
        return self.ci_low <= fraction <= self.ci_high


def monte_carlo_intersection(n, d, d_v, r, weighting="binary", beta=None, seed=0, confidence=0.99):
    """Estimate I(d_v) / 2^n with r uniformly random neurons; a check of circle_intersection.

    SDM with r random neuron addresses (Kanerva 1988): the query is the all-zeros address, the
    pattern has its first ``d_v`` bits set, and each neuron within Hamming radius ``d`` of both
    contributes its weight (Bricken et al. 2023, App. A.7, Eqs. 7-9). For the binary weighting
    the interval is the exact Clopper-Pearson interval of the hit count; for the linear and
    exponential weightings it is the normal (CLT) interval mean ± z·s/√r of the per-neuron
    weights (s: sample standard deviation), clipped at 0.

    Arguments:
        n: address length, int in [1, 2^28].
        d: Hamming radius, int in [0, n].
        d_v: distance between the centres, int in [0, n].
        r: number of neurons sampled, int >= 1 with r·⌈n/64⌉ <= 2^30 (``MAX_SAMPLED_WORDS``:
            about 10 s of one core).
        weighting, beta: as in :func:`circle_intersection`.
        seed: seed of ``numpy.random.default_rng``, int >= 0; same seed → same numbers.
        confidence: level of the interval, float in (0, 1).

    Returns:
        :class:`MonteCarloIntersection`.

    Raises:
        ValueError: for bad n, d, d_v, r (also one beyond the limit above), weighting, β,
            seed or confidence.
    """
    n = check_int(n, "n", 1, 64 * _CHUNK_WORDS)
    d = check_int(d, "d", 0, n)
    d_v = check_int(d_v, "d_v", 0, n)
    r = check_int(r, "r", 1, None)
    words_per_neuron = (n + 63) // 64
    if r * words_per_neuron > MAX_SAMPLED_WORDS:
        raise ValueError(
            f"r={r} is too many neurons for n={n}: at most "
            f"{MAX_SAMPLED_WORDS // words_per_neuron:,} (r·⌈n/64⌉ <= {MAX_SAMPLED_WORDS:,} "
            f"sampled 64-bit words, about 10 s of one core); use circle_intersection for "
            f"the exact value")
    weighting, beta = check_weighting(weighting, beta)
    seed = check_seed(seed)
    confidence = check_real(confidence, "confidence", 0.0, 1.0, low_open=True, high_open=True)
    rng = np.random.default_rng(seed)
    n_words = (n + 63) // 64
    last_mask = np.uint64((1 << (n - 64 * (n_words - 1))) - 1)  # valid bits of the last word
    pattern = np.zeros(n_words, dtype=np.uint64)  # the first d_v bits set
    pattern[: d_v // 64] = np.iinfo(np.uint64).max
    if d_v % 64:
        pattern[d_v // 64] = np.uint64((1 << (d_v % 64)) - 1)
    chunk = min(_CHUNK, _CHUNK_WORDS // n_words)  # _CHUNK for every n <= 4096
    total = total_sq = 0.0
    hits = 0
    for start in range(0, r, chunk):
        size = min(chunk, r - start)
        words = rng.integers(0, np.iinfo(np.uint64).max, size=(size, n_words), dtype=np.uint64, endpoint=True)
        words[:, -1] &= last_mask  # (size, n_words): one neuron address per row
        x_q = np.bitwise_count(words).sum(axis=1, dtype=np.int64)
        x_p = np.bitwise_count(words ^ pattern).sum(axis=1, dtype=np.int64)
        inside = (x_q <= d) & (x_p <= d)
        w = _weight(weighting, n, x_q[inside], x_p[inside], beta)
        hits += int(inside.sum())
        total += math.fsum(w.tolist())
        total_sq += math.fsum((w * w).tolist())
    estimate = total / r
    if weighting == "binary":
        ci = stats.binomtest(hits, r).proportion_ci(confidence_level=confidence, method="exact")
        low, high = float(ci.low), float(ci.high)
    else:
        var = max(total_sq - r * estimate * estimate, 0.0) / max(r - 1, 1)
        half = float(stats.norm.ppf(0.5 + confidence / 2)) * math.sqrt(var / r)
        low, high = max(estimate - half, 0.0), estimate + half
    return MonteCarloIntersection(estimate, low, high, hits, r, confidence)
