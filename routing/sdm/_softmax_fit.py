"""Fit of the softmax exponential that the SDM circle intersection approximates."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from routing.validation import check_bool, check_int
from routing.sdm._checks import check_cosine, check_hamming, check_weighting
from routing.sdm._continuous import cap_intersection_fraction
from routing.sdm._intersection import circle_intersection

__all__ = ["fit_softmax_beta", "SoftmaxFit"]


@dataclass(frozen=True)
class SoftmaxFit:
    """Result of :func:`fit_softmax_beta`: ln I(d_v) ≈ intercept + beta · cosine(d_v).

    Attributes:
        beta: fitted slope, the softmax inverse temperature in cosine units (dimensionless).
        intercept: fitted value of ln I at cosine 0 (ln of a point count for the binary
            space; ln of a fraction of the sphere when ``continuous``).
        d_v: (N,) int64, the Hamming distances used.
        cosine: (N,) float64, 1 - 2 d_v / n.
        log_intersection: (N,) float64, the ln I values regressed.
        r_squared: coefficient of determination of the fit.
    """

    beta: float
    intercept: float
    d_v: np.ndarray
    cosine: np.ndarray
    log_intersection: np.ndarray
    r_squared: float

    def predict_log(self, cosine):
        """intercept + beta · cosine (float or float64 array of ``cosine``'s shape).

        Raises:
            ValueError: if ``cosine`` is not a real number or array in [-1, 1].
        """
        cos, scalar = check_cosine(cosine, "cosine")
        out = self.intercept + self.beta * cos
        return float(out) if scalar else out


def fit_softmax_beta(n, d, d_v=None, continuous=False, *, weighting="binary", beta=None):
    """Fit ln I(d_v) = intercept + β·cos(d_v) by ordinary least squares (Bricken & Pehlevan 2021).

    SDM reads a pattern at Hamming distance d_v with a weight proportional to the circle
    intersection I(d_v), which decays about exponentially in the cosine similarity
    cos = 1 - 2 d_v / n of query and pattern; softmax attention weights exp(β·cos). The
    estimator is exactly the unweighted least-squares line through the points
    (x_i, y_i) = (1 - 2 d_v,i / n, ln I(d_v,i)):

        β = Σ (x_i - x̄)(y_i - ȳ) / Σ (x_i - x̄)²,   intercept = ȳ - β x̄,

    with both sums over the same N points (the public reference code divides a covariance
    with N - 1 by a variance with N, which inflates β by N/(N - 1); this one does not).
    ln I is taken in log space, so no point underflows. Sources: Bricken & Pehlevan 2021
    (the fit, over d_v = 0 … d - 1); Bricken et al. 2023, App. A.7, Eqs. 7-9 (the weightings).

    Arguments:
        n: address length / dimension, int >= 2.
        d: Hamming radius, int in [1, n] ([2, n] with the default d_v); the continuous fit uses
            the cosine threshold t = 1 - 2d/n.
        d_v: Hamming distances to fit over: an int array with at least two distinct values in
            [0, min(n, 2d)] (the intersection is empty beyond 2d); default 0 … d - 1.
        continuous: fit the cap intersection of the sphere S^(n-1) with threshold t and
            cosine 1 - 2 d_v / n between the centres instead of the binary count.
        weighting, beta: weighting of the binary count, as in :func:`circle_intersection`
            (binary only when ``continuous``).

    Returns:
        :class:`SoftmaxFit`.

    Raises:
        ValueError: for ``continuous`` not a bool, n < 2, d outside [1, n] (or d < 2 with the default d_v), d_v outside [0, min(n, 2d)] or with fewer
            than two distinct values, a bad weighting or β, or a non-binary weighting with
            ``continuous``.
    """
    n = check_int(n, "n", 2, None)
    d = check_int(d, "d", 1, n)
    weighting, beta = check_weighting(weighting, beta)
    continuous = check_bool(continuous, "continuous")
    if continuous and weighting != "binary":
        raise ValueError(f"weighting must be 'binary' when continuous=True, got {weighting!r}")
    if d_v is None:
        if d < 2:
            raise ValueError(f"d must be an integer in [2, {n}] for the default d_v = 0 … d - 1, got {d}")
        dvs = np.arange(d, dtype=np.int64)
    else:
        dvs, _ = check_hamming(d_v, "d_v", min(n, 2 * d))
        dvs = dvs.ravel()
    if np.unique(dvs).size < 2:
        raise ValueError(f"d_v must hold at least two distinct values in [0, {min(n, 2 * d)}], got {dvs.tolist()}")
    x = 1.0 - 2.0 * dvs / n
    if continuous:
        y = np.asarray(cap_intersection_fraction(n, 1.0 - 2.0 * d / n, x, log=True), dtype=np.float64)
    else:
        y = circle_intersection(n, d, dvs, weighting, beta, log=True)
    if not np.all(np.isfinite(y)):
        raise ValueError(f"d_v must index non-empty intersections for n={n}, d={d}; got some at -inf")
    xc, yc = x - x.mean(), y - y.mean()
    slope = float(np.dot(xc, yc) / np.dot(xc, xc))
    intercept = float(y.mean() - slope * x.mean())
    residual = y - (intercept + slope * x)
    ss_tot = float(np.dot(yc, yc))
    r_squared = 1.0 - float(np.dot(residual, residual)) / ss_tot if ss_tot > 0 else 1.0
    return SoftmaxFit(slope, intercept, dvs, x, y, r_squared)
