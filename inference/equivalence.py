"""Equivalence of a paired mean difference to 0 within a stated band: two one-sided tests
(TOST), and the test that the difference lies beyond the band.

An equivalence claim ("A matches B", "A performs as well as B") is supported when the mean
paired difference is shown to lie inside (low, high): both one-sided tests H0: μ ≤ low and
H0: μ ≥ high reject, i.e. the TOST p-value max(p_low, p_high) ≤ α — equivalently the
(1 − 2α) t interval lies inside the band. A point estimate inside the band never decides.
The tests are ``statsmodels.stats.weightstats.ttost_paired`` (TOST) and
``scipy.stats.ttest_1samp`` (the difference beyond the band).

Sources: Schuirmann 1987, "A comparison of the two one-sided tests procedure and the power
approach for assessing the equivalence of average bioavailability", J. Pharmacokinetics and
Biopharmaceutics 15; Lakens 2017, "Equivalence tests", Social Psychological and Personality
Science 8.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np
from scipy import stats
from statsmodels.stats.weightstats import ttost_paired

from inference._validation import check_finite_vector

__all__ = ["EquivalenceResult", "tost_paired", "beyond_band_p"]


class EquivalenceResult(NamedTuple):
    """``tost_paired``'s answer.

    Attributes:
        p_value: the TOST p-value max(p_low, p_high) (nan when no noise was measured).
        p_low: p-value of H0 μ ≤ low (vs μ > low).
        p_high: p-value of H0 μ ≥ high (vs μ < high).
        mean: the mean difference; sd: its standard deviation (ddof = 1); n: the count.
        low, high: the band.
    """

    p_value: float
    p_low: float
    p_high: float
    mean: float
    sd: float
    n: int
    low: float
    high: float


def _band(low, high) -> tuple[float, float]:
    """The band as floats: reals, low < high, at most one side infinite (−inf below: a
    non-inferiority band; +inf above: non-superiority)."""
    for value, name in ((low, "low"), (high, "high")):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or np.isnan(value):
            raise ValueError(f"{name} must be a real number, got {value!r}")
    low, high = float(low), float(high)
    if not low < high or low == np.inf or high == -np.inf or not (np.isfinite(low)
                                                                   or np.isfinite(high)):
        raise ValueError(f"the band must have low < high with at most one side infinite, got "
                         f"low={low!r}, high={high!r}")
    return low, high


def tost_paired(differences, low: float, high: float) -> EquivalenceResult:
    """Two one-sided t tests that the mean of ``differences`` lies inside (``low``, ``high``).

    Arguments:
        differences: 1-D array of paired differences (one per seed, e.g. cluster means of
            ln error ratios), finite, float64; n ≥ 1.
        low, high: the equivalence band, low < high (e.g. ±ln 1.1 for "within 10 %"); one
            side may be infinite: (−inf, high) is a non-inferiority test ("not worse than
            high"), whose TOST p-value is the upper test's alone.

    Returns:
        :class:`EquivalenceResult`; p-values nan with n < 2 or sd = 0 (no noise measured: a
        zero-width interval never shows equivalence).

    Raises:
        ValueError: ``differences`` empty, not 1-D or not finite; a band with a NaN, with
            low ≥ high or infinite on both sides.

    Source: Schuirmann 1987; ``statsmodels.stats.weightstats.ttost_paired``.
    """
    d = check_finite_vector(differences, "differences", min_size=1)
    low, high = _band(low, high)
    n = len(d)
    mean = float(d.mean())
    sd = float(d.std(ddof=1)) if n >= 2 else float("nan")
    if n < 2 or not sd > 1e-12 * max(1.0, abs(mean)):
        nan = float("nan")
        return EquivalenceResult(nan, nan, nan, mean, sd, n, low, high)
    # an infinite side holds for certain (p 0); a finite one is statsmodels' one-sided test
    finite_low = low if np.isfinite(low) else high - 1.0
    finite_high = high if np.isfinite(high) else low + 1.0
    _, (_, p_low, _), (_, p_high, _) = ttost_paired(d, np.zeros_like(d), finite_low,
                                                    finite_high)
    p_low = float(p_low) if np.isfinite(low) else 0.0
    p_high = float(p_high) if np.isfinite(high) else 0.0
    return EquivalenceResult(max(p_low, p_high), p_low, p_high, mean, sd, n, low, high)


def beyond_band_p(differences, low: float, high: float) -> float:
    """p-value that the mean of ``differences`` lies beyond the band: the smaller of the
    one-sided t tests H0 μ ≥ low (vs μ < low) and H0 μ ≤ high (vs μ > high), doubled (a
    Bonferroni union over the two sides) and capped at 1; an infinite side is never crossed
    (one finite side: its test alone, not doubled). Small: the difference is shown to
    be outside (low, high), so an equivalence claim is contradicted.

    Arguments and errors: as ``tost_paired``.

    Returns:
        float in [0, 1]; nan with n < 2 or sd = 0.

    Source: Lakens 2017 (inferiority/superiority tests beside TOST).
    """
    d = check_finite_vector(differences, "differences", min_size=1)
    low, high = _band(low, high)
    if len(d) < 2 or not d.std(ddof=1) > 1e-12 * max(1.0, abs(float(d.mean()))):
        return float("nan")
    sides = [stats.ttest_1samp(d, bound, alternative=side).pvalue
             for bound, side in ((low, "less"), (high, "greater")) if np.isfinite(bound)]
    return float(min(1.0, len(sides) * min(sides)))
