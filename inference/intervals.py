"""Confidence intervals: the exact binomial (Clopper–Pearson) interval and Student's t interval.

Both are thin layers over scipy: the Clopper–Pearson bounds are Beta quantiles
(``scipy.stats.beta.ppf``, the same numbers as ``scipy.stats.binomtest(...).proportion_ci(
method="exact")``, vectorised), and the t interval is
``scipy.stats.ttest_1samp(...).confidence_interval``.

Sources: Clopper & Pearson 1934, "The use of confidence or fiducial limits illustrated in the
case of the binomial", Biometrika 26; Student 1908, "The probable error of a mean",
Biometrika 6.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from scipy import stats

from inference._validation import (check_alternative, check_confidence, check_counts,
                                   check_finite_vector)

__all__ = ["clopper_pearson", "power_lower_bound", "t_interval", "TInterval"]


def clopper_pearson(successes, trials, confidence: float = 0.95,
                    alternative: str = "two-sided"):
    """Exact (Clopper–Pearson) confidence interval of a binomial proportion.

    With α = 1 − confidence and k successes in n trials:

    - ``"two-sided"``: low = B(α/2; k, n − k + 1) (0 when k = 0),
      high = B(1 − α/2; k + 1, n − k) (1 when k = n);
    - ``"greater"`` (a lower bound: the claim is "p is at least low"):
      low = B(α; k, n − k + 1) (0 when k = 0), high = 1;
    - ``"less"`` (an upper bound): low = 0, high = B(1 − α; k + 1, n − k) (1 when k = n);

    B(q; a, b) the q-quantile of Beta(a, b). The coverage is at least ``confidence`` for every
    true p (the interval is conservative). Identical to
    ``scipy.stats.binomtest(k, n, alternative=alternative).proportion_ci(confidence,
    method="exact")`` and to statsmodels' ``proportion_confint(k, n, α, method="beta")``.

    Arguments:
        successes: number(s) of successes k, integer scalar or array of any shape (integral
            floats accepted), 0 ≤ k ≤ trials.
        trials: number(s) of independent trials n ≥ 1, integer scalar or array broadcastable
            with ``successes``.
        confidence: nominal coverage, in (0, 1).
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"`` (as in scipy).

    Returns:
        (low, high): Python floats when both counts are scalars, else float64 arrays of the
        broadcast shape; values in [0, 1].

    Raises:
        ValueError: if ``successes`` is not integral or outside 0..trials, ``trials`` < 1,
            ``confidence`` is not in (0, 1) or ``alternative`` is not one of the three names.

    Source: Clopper & Pearson 1934.
    """
    return _clopper_pearson(successes, trials, confidence, alternative,
                            ("successes", "trials"))


def _clopper_pearson(successes, trials, confidence, alternative, names):
    """``clopper_pearson`` with the count parameters' names of the public caller."""
    confidence = check_confidence(confidence)
    alternative = check_alternative(alternative)
    n = check_counts(trials, names[1], low=1)
    k = check_counts(successes, names[0], low=0, high=n, high_name=names[1])
    k, n = np.broadcast_arrays(k, n)
    kf, nf = k.astype(np.float64), n.astype(np.float64)
    alpha = 1.0 - confidence
    q_low, q_high = {"two-sided": (alpha / 2, 1 - alpha / 2),
                     "greater": (alpha, None), "less": (None, 1 - alpha)}[alternative]
    with np.errstate(invalid="ignore", divide="ignore"):
        low = (np.zeros_like(kf) if q_low is None
               else np.where(k == 0, 0.0, stats.beta.ppf(q_low, kf, nf - kf + 1)))
        high = (np.ones_like(kf) if q_high is None
                else np.where(k == n, 1.0, stats.beta.ppf(q_high, kf + 1, nf - kf)))
    if k.ndim == 0:
        return float(low), float(high)
    return low, high


def power_lower_bound(refuted, n, confidence: float = 0.95):
    """One-sided lower confidence bound of a power estimate (refuted of n planted runs).

    The power of a check is the probability that it refutes a planted violation; it is
    estimated by the fraction of ``n`` planted runs refuted and counts only through this bound,
    the one-sided Clopper–Pearson lower limit ``clopper_pearson(refuted, n, confidence,
    "greater")[0]``. E.g. 14 of 14 gives 0.807 at 95 %, 13 of 14 gives 0.703.

    Arguments:
        refuted: number(s) of planted runs refuted, integer scalar or array, 0..n.
        n: number(s) of planted runs ≥ 1, broadcastable with ``refuted``.
        confidence: one-sided coverage, in (0, 1).

    Returns:
        float (scalar counts) or float64 array of the broadcast shape, in [0, 1].

    Raises:
        ValueError: if ``refuted`` is not integral or outside 0..n, ``n`` < 1 or
            ``confidence`` is not in (0, 1).

    Source: Clopper & Pearson 1934.
    """
    return _clopper_pearson(refuted, n, confidence, "greater", ("refuted", "n"))[0]


class TInterval(NamedTuple):
    """Student's t interval of a mean: ``mean, sd, low, high = t_interval(values)``.

    Attributes:
        mean: the sample mean.
        sd: the sample standard deviation (ddof = 1).
        low, high: the interval's ends (−inf or +inf on the open side of a one-sided one).
    """

    mean: float
    sd: float
    low: float
    high: float


def t_interval(values, confidence: float = 0.95, alternative: str = "two-sided") -> TInterval:
    """Student's t confidence interval of the mean of ``values`` (one-sample or paired).

    mean ± t_{1−α/2, n−1} · sd / √n with sd the sample standard deviation (ddof = 1); for a
    paired comparison pass the per-pair differences. One-sided versions give
    [mean − t_{1−α, n−1} · sd/√n, +inf) (``"greater"``) or (−inf, mean + …] (``"less"``).
    Computed by ``scipy.stats.ttest_1samp(values, 0).confidence_interval(confidence)``.
    The interval assumes independent, roughly normal values; with sd = 0 it has zero width
    (low = high = mean), which measures no noise at all — a caller deciding a claim must treat
    that case as "no seed noise measured", not as a precise estimate.

    Arguments:
        values: 1-D array-like of n ≥ 2 finite real numbers.
        confidence: nominal coverage, in (0, 1).
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"`` (as in scipy).

    Returns:
        :class:`TInterval` (mean, sd, low, high), Python floats.

    Raises:
        ValueError: if ``values`` is not 1-D, has fewer than 2 entries (no variance can be
            estimated from one value) or non-finite entries; if ``confidence`` is not in
            (0, 1) or ``alternative`` is not one of the three names.

    Source: Student 1908.
    """
    x = check_finite_vector(values, "values")
    if x.size < 2:
        raise ValueError(f"values must have at least 2 entries for a t interval (the sample "
                         f"standard deviation needs n >= 2), got {x.size}")
    confidence = check_confidence(confidence)
    alternative = check_alternative(alternative)
    mean, sd = float(np.mean(x)), float(np.std(x, ddof=1))
    if sd == 0.0:  # scipy warns about precision loss here; the interval is the point
        low = mean if alternative != "less" else -np.inf
        high = mean if alternative != "greater" else np.inf
        return TInterval(mean, 0.0, float(low), float(high))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # near-constant data: exact enough
        ci = stats.ttest_1samp(x, 0.0, alternative=alternative).confidence_interval(confidence)
    return TInterval(mean, sd, float(ci.low), float(ci.high))
