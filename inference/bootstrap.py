"""Percentile bootstrap intervals, two-sided or one-sided.

``bootstrap_interval`` resamples the data itself (``scipy.stats.bootstrap`` with
``method="percentile"``, seeded through a numpy ``Generator``); ``percentile_interval`` turns
bootstrap replicates that a caller computed itself (e.g. a resampling over seeds with a
structure scipy does not know) into the same interval, with the same percentiles.

Source: Efron & Tibshirani 1993, "An Introduction to the Bootstrap", ch. 13 (the percentile
interval).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from scipy import stats

from inference._validation import check_alternative, check_confidence, check_finite_vector

__all__ = ["BootstrapInterval", "bootstrap_interval", "percentile_interval"]


class BootstrapInterval(NamedTuple):
    """A percentile bootstrap interval, labelled with its coverage and sidedness.

    Attributes:
        estimate: the statistic on the original data.
        low, high: the interval's ends (−inf / +inf on the open side of a one-sided one).
        confidence: nominal coverage.
        alternative: ``"two-sided"``, ``"greater"`` ([low, inf)) or ``"less"`` ((−inf, high]).
        n_resamples: number of bootstrap resamples.
    """

    estimate: float
    low: float
    high: float
    confidence: float
    alternative: str
    n_resamples: int


def _quantile_levels(confidence: float, alternative: str) -> tuple[float | None, float | None]:
    alpha = 1.0 - confidence
    return {"two-sided": (alpha / 2, 1 - alpha / 2), "greater": (alpha, None),
            "less": (None, 1 - alpha)}[alternative]


def percentile_interval(replicates, confidence: float = 0.95,
                        alternative: str = "two-sided") -> tuple[float, float]:
    """Percentile interval of precomputed bootstrap replicates of a statistic.

    Two-sided: the α/2 and 1 − α/2 quantiles of the replicates (α = 1 − confidence);
    ``"greater"``: [α quantile, +inf); ``"less"``: (−inf, 1 − α quantile]. Quantiles use numpy's
    default linear interpolation, as ``scipy.stats.bootstrap(method="percentile")`` does.

    Arguments:
        replicates: 1-D array-like of B ≥ 1 finite bootstrap values of the statistic (drop the
            resamples on which the statistic could not be computed before calling).
        confidence: nominal coverage, in (0, 1).
        alternative: ``"two-sided"``, ``"greater"`` or ``"less"``.

    Returns:
        (low, high) as Python floats.

    Raises:
        ValueError: if ``replicates`` is empty, not 1-D or has non-finite entries; if
            ``confidence`` is not in (0, 1) or ``alternative`` is not one of the three names.

    Source: Efron & Tibshirani 1993, §13.3.
    """
    values = check_finite_vector(replicates, "replicates", min_size=1)
    confidence = check_confidence(confidence)
    q_low, q_high = _quantile_levels(confidence, check_alternative(alternative))
    low = -np.inf if q_low is None else np.percentile(values, 100 * q_low)
    high = np.inf if q_high is None else np.percentile(values, 100 * q_high)
    return float(low), float(high)


def bootstrap_interval(data, statistic: Callable, *, n_resamples: int = 9999,
                       confidence: float = 0.95, alternative: str = "two-sided",
                       seed: int | np.random.Generator = 0) -> BootstrapInterval:
    """Percentile bootstrap interval of ``statistic`` over resamples of ``data``.

    Each resample draws the n observations with replacement; the interval is
    :func:`percentile_interval` of the ``n_resamples`` values of the statistic. Computed by
    ``scipy.stats.bootstrap(..., method="percentile")``. The percentile interval is only
    first-order accurate: with few observations (fewer than about 10) its coverage falls below
    the nominal one.

    Arguments:
        data: 1-D array-like of n ≥ 2 finite observations, or a tuple of such arrays (one per
            independent sample, each resampled on its own, for a two-sample statistic).
        statistic: function of one array per sample returning a float; if it accepts an
            ``axis`` keyword it is called vectorised over resamples (as scipy does).
        n_resamples: number of resamples B ≥ 1.
        confidence: nominal coverage, in (0, 1).
        alternative: ``"two-sided"``, ``"greater"`` ([low, inf)) or ``"less"`` ((−inf, high]).
        seed: integer seed ≥ 0 or a ``numpy.random.Generator`` (same seed, same interval).

    Returns:
        :class:`BootstrapInterval` (estimate, low, high, confidence, alternative,
        n_resamples).

    Raises:
        ValueError: if a sample is not 1-D, has fewer than 2 values or non-finite entries;
            ``statistic`` is not callable; ``n_resamples`` is not an integer ≥ 1; ``seed`` is
            neither an integer ≥ 0 nor a Generator; ``confidence`` or ``alternative`` are bad.

    Source: Efron & Tibshirani 1993, ch. 6 and §13.3.
    """
    samples = data if isinstance(data, tuple) else (data,)
    if not samples:
        raise ValueError("data must be a 1-D array or a non-empty tuple of 1-D arrays")
    samples = tuple(check_finite_vector(s, "data", min_size=2) for s in samples)
    if not callable(statistic):
        raise ValueError(f"statistic must be callable, got {statistic!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) \
            or n_resamples < 1:
        raise ValueError(f"n_resamples must be an integer >= 1, got {n_resamples!r}")
    confidence = check_confidence(confidence)
    alternative = check_alternative(alternative)
    if isinstance(seed, np.random.Generator):
        rng = seed
    elif isinstance(seed, (int, np.integer)) and not isinstance(seed, bool) and seed >= 0:
        rng = np.random.default_rng(int(seed))
    else:
        raise ValueError(f"seed must be an integer >= 0 or a numpy Generator, got {seed!r}")
    estimate = float(statistic(*samples))
    res = stats.bootstrap(samples, statistic, n_resamples=int(n_resamples),
                          confidence_level=confidence, alternative=alternative,
                          method="percentile", rng=rng)
    ci = res.confidence_interval
    return BootstrapInterval(estimate, float(ci.low), float(ci.high), confidence, alternative,
                             int(n_resamples))
