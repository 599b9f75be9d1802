"""Power-law exponents: the least-squares slope of log y on log x, with its t interval.

For y ≈ C · x^b (or y − E ≈ C · x^b with a known offset E), ln(y − E) = ln C + b · ln x is a
straight line; its ordinary least-squares slope b, the slope's standard error and the
intercept come from ``scipy.stats.linregress``, and the interval is b ± t_{1−α/2, n−2} · se(b)
(Student's t with n − 2 degrees of freedom), which assumes independent, homoscedastic, normal
residuals on the log scale. Fits that are not plain least squares on the log–log scale (an
offset estimated from the data, robust losses, weights) are not this function.

Source: Student 1908 (the t distribution of the slope); any regression text, e.g. Draper &
Smith 1998, "Applied Regression Analysis", §1.4 and §3.2.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from scipy import stats

from inference._validation import check_confidence, check_finite_vector

__all__ = ["ExponentFit", "fit_exponent"]


class ExponentFit(NamedTuple):
    """A least-squares fit ln(y − offset) = intercept + slope · ln x.

    Attributes:
        slope: the exponent b (for a decay y ≈ C · x^(−α), α = −slope).
        stderr: standard error of the slope (NaN with only two points).
        intercept: ln C.
        intercept_stderr: standard error of the intercept (NaN with only two points).
        low, high: the slope's t interval at ``confidence`` (NaN with only two points).
        n: number of points used.
        confidence: the interval's nominal coverage.
    """

    slope: float
    stderr: float
    intercept: float
    intercept_stderr: float
    low: float
    high: float
    n: int
    confidence: float


def fit_exponent(x, y, offset: float = 0.0, confidence: float = 0.95) -> ExponentFit:
    """Least-squares slope of ln(y − offset) on ln x, with its Student-t interval.

    Arguments:
        x: 1-D array-like of n finite values > 0 (e.g. sizes), with at least two distinct
            values.
        y: 1-D array-like of n finite values with y − offset > 0.
        offset: a known offset E subtracted from y before the log (default 0: a pure power
            law), a finite real number.
        confidence: the slope interval's nominal coverage, in (0, 1).

    Returns:
        :class:`ExponentFit`; with exactly two points the line passes through both, and the
        standard errors and interval are NaN (no residual degrees of freedom).

    Raises:
        ValueError: if ``x`` or ``y`` are not 1-D finite arrays of one length; an x ≤ 0; a
            y − offset ≤ 0; fewer than two distinct x; a non-finite ``offset``; ``confidence``
            not in (0, 1).

    Source: Student 1908; Draper & Smith 1998, §1.4 and §3.2.
    """
    xs = check_finite_vector(x, "x")
    ys = check_finite_vector(y, "y")
    if xs.size != ys.size:
        raise ValueError(f"x and y must have one length, got {xs.size} and {ys.size}")
    if isinstance(offset, bool) or not isinstance(offset, (int, float, np.integer, np.floating)) \
            or not math.isfinite(offset):
        raise ValueError(f"offset must be a finite real number, got {offset!r}")
    confidence = check_confidence(confidence)
    if np.any(xs <= 0):
        raise ValueError(f"x must be > 0 for a log-log fit; got {xs[xs <= 0][0]!r}")
    shifted = ys - float(offset)
    if np.any(shifted <= 0):
        bad = ys[shifted <= 0][0]
        raise ValueError(f"y - offset must be > 0 for a log-log fit; got y = {bad!r} with "
                         f"offset = {float(offset)!r}")
    if np.unique(xs).size < 2:
        raise ValueError("x must have at least two distinct values to fit a slope")
    res = stats.linregress(np.log(xs), np.log(shifted))
    n = int(xs.size)
    if n > 2:
        stderr, intercept_stderr = float(res.stderr), float(res.intercept_stderr)
        half = stats.t.ppf(0.5 + confidence / 2, n - 2) * stderr
        low, high = float(res.slope - half), float(res.slope + half)
    else:
        stderr = intercept_stderr = low = high = float("nan")
    return ExponentFit(float(res.slope), stderr, float(res.intercept), intercept_stderr, low,
                       high, n, confidence)
