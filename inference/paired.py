"""Paired tests of a mean difference: an exact sign-flip permutation test (stratified by size,
flipping whole clusters such as seeds), the paired t test on cluster means with its normality
check, and ``paired_test``, which picks between them by a rule fixed in advance.

A paired comparison of two models A and B measured at several sizes (strata) on several seeds
(clusters) gives one difference d per (size, seed). The null hypothesis "A and B tie" makes
each difference symmetric about 0. When a seed fixes both the data and the initialisation of
every size, the differences of one seed are correlated, and only whole seeds may be flipped:
flipping each (size, seed) cell alone is then anti-conservative (simulated: one-sided size
0.16 at nominal 0.05 when the seed's share of the variance equals the cell's). So the tests
here take ``clusters``; flipping cells alone is the special case ``clusters=None``.

The statistic is stratified: the mean over sizes of the per-size mean difference, so that
every size weighs the same however many seeds it has.

Sources: Fisher 1935, *The Design of Experiments*, §21 (the randomisation test of paired
differences); Phipson & Smyth 2010, "Permutation p-values should never be zero" (the Monte
Carlo p-value (b + 1)/(m + 1)); Student 1908 (the t test); Shapiro & Wilk 1965 (the normality
check).
"""

from __future__ import annotations

import itertools
import numbers
from typing import NamedTuple

import numpy as np
from scipy import stats

from inference._validation import check_alternative, check_confidence, check_finite_vector

__all__ = ["SignFlipResult", "PairedTestResult", "sign_flip_test", "paired_t_test",
           "paired_test", "cluster_means", "EXACT_LIMIT"]

#: Largest number of flip units enumerated exactly (2**16 sign vectors); above it, Monte Carlo.
EXACT_LIMIT = 16


class SignFlipResult(NamedTuple):
    """``sign_flip_test``'s answer.

    Attributes:
        statistic: the observed stratified mean difference.
        p_value: the permutation p-value (exact, or (b + 1)/(m + 1) by Monte Carlo).
        n_units: the number of flip units (clusters, or differences without clusters).
        exact: True when all 2**n_units sign vectors were enumerated.
        min_p_value: the smallest p-value the test can give with these units (exact: 1/2**n
            one-sided, 2/2**n two-sided; Monte Carlo: 1/(m + 1)).
    """

    statistic: float
    p_value: float
    n_units: int
    exact: bool
    min_p_value: float


class PairedTestResult(NamedTuple):
    """``paired_t_test``'s and ``paired_test``'s answer.

    Attributes:
        test: the test that gave ``p_value`` ("paired t on cluster means", "sign-flip
            (exact)", "sign-flip (Monte Carlo)" or "none (no noise measured)").
        mean: the stratified mean difference (mean over clusters of each cluster's mean over
            strata).
        sd: the standard deviation (ddof = 1) of the cluster means; nan with one cluster.
        n: the number of clusters.
        low, high: the t interval of the mean at ``confidence`` (nan with n < 2 or sd = 0).
        p_value: the p-value of mean = 0 (nan when no noise was measured: n < 2 or sd = 0).
        normality_p: Shapiro–Wilk p-value of the cluster means (nan with fewer than 3
            clusters or none varying).
        min_p_value: the smallest p-value the chosen test can give (0 for the t test).
    """

    test: str
    mean: float
    sd: float
    n: int
    low: float
    high: float
    p_value: float
    normality_p: float
    min_p_value: float


def _labels(values, n: int, name: str) -> np.ndarray:
    """``values`` as a length-``n`` label array (None: one label per entry for clusters)."""
    arr = np.asarray(values, dtype=object)
    if arr.ndim != 1 or len(arr) != n:
        raise ValueError(f"{name} must be a 1-D sequence of labels as long as differences "
                         f"({n}), got shape {arr.shape}")
    return arr


def _check_int(value, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    return int(value)


def _unit_contributions(d: np.ndarray, strata, clusters) -> np.ndarray:
    """Each flip unit's contribution c_u to the stratified mean T = Σ_u c_u (flipping unit u
    negates c_u): d_i / (n_strata · n_i's stratum) summed over the unit's differences."""
    n = len(d)
    strata = np.zeros(n, dtype=object) if strata is None else _labels(strata, n, "strata")
    clusters = (np.arange(n).astype(object) if clusters is None
                else _labels(clusters, n, "clusters"))
    _, stratum = np.unique(strata.astype(str), return_inverse=True)
    weight = 1.0 / (stratum.max() + 1) / np.bincount(stratum)[stratum]
    _, unit = np.unique(clusters.astype(str), return_inverse=True)
    return np.bincount(unit, weights=d * weight)


def sign_flip_test(differences, strata=None, clusters=None, alternative: str = "two-sided",
                   n_resamples: int = 9999, seed: int = 0,
                   exact_limit: int = EXACT_LIMIT) -> SignFlipResult:
    """Sign-flip permutation test of "the paired differences are symmetric about 0".

    The statistic is T = mean over strata of the stratum's mean difference. Each flip unit
    (a cluster, or each difference when ``clusters`` is None) has its differences negated
    together; with n units, all 2**n sign vectors are enumerated when n ≤ ``exact_limit``
    (an exact test), else ``n_resamples`` random sign vectors drawn with ``seed`` give the
    p-value (b + 1)/(m + 1), b counting those at least as extreme as observed. Ties with the
    observed value count as extreme (a relative tolerance of 1e-12 absorbs rounding).

    Arguments:
        differences: 1-D array of n ≥ 1 finite paired differences (A − B), float64.
        strata: labels (e.g. sizes), one per difference, or None (one stratum).
        clusters: labels (e.g. seeds), one per difference, flipped together, or None.
        alternative: "two-sided" (|T|), "less" (T small: A below B) or "greater".
        n_resamples: Monte Carlo sign vectors m ≥ 1 (used only above ``exact_limit``).
        seed: seed of the Monte Carlo draw (an integer ≥ 0).
        exact_limit: largest unit count enumerated exactly, 1..20.

    Returns:
        :class:`SignFlipResult`.

    Raises:
        ValueError: ``differences`` empty, not 1-D or not finite; labels of the wrong length;
            a bad ``alternative``, ``n_resamples``, ``seed`` or ``exact_limit``.

    Source: Fisher 1935, §21; Phipson & Smyth 2010.
    """
    d = check_finite_vector(differences, "differences", min_size=1)
    alternative = check_alternative(alternative)
    n_resamples = _check_int(n_resamples, "n_resamples", 1)
    seed = _check_int(seed, "seed", 0)
    exact_limit = _check_int(exact_limit, "exact_limit", 1)
    if exact_limit > 20:
        raise ValueError(f"exact_limit must be in 1..20 (2**20 sign vectors), got "
                         f"{exact_limit}")
    c = _unit_contributions(d, strata, clusters)
    observed = float(c.sum())
    n = len(c)
    exact = n <= exact_limit
    if exact:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))  # (2**n, n)
    else:
        rng = np.random.default_rng(seed)
        signs = rng.choice((1.0, -1.0), size=(n_resamples, n))  # (m, n)
    null = signs @ c
    tol = 1e-12 * max(1.0, float(np.abs(c).sum()))
    if alternative == "two-sided":
        extreme = np.abs(null) >= abs(observed) - tol
    elif alternative == "less":
        extreme = null <= observed + tol
    else:
        extreme = null >= observed - tol
    if exact:
        p = float(extreme.mean())
        smallest = (2.0 if alternative == "two-sided" else 1.0) / 2 ** n
    else:
        p = float((extreme.sum() + 1) / (n_resamples + 1))
        smallest = 1.0 / (n_resamples + 1)
    return SignFlipResult(observed, min(p, 1.0), n, exact, min(smallest, 1.0))


def cluster_means(differences, strata=None, clusters=None) -> np.ndarray:
    """Per cluster, the mean over strata of its differences (each stratum's differences of
    that cluster averaged first): a 1-D float64 array, one value per cluster in sorted label
    order. Without clusters every difference is its own cluster.

    Raises:
        ValueError: as ``sign_flip_test``; a cluster that lacks a stratum another has (the
            cluster means would average different sizes).
    """
    d = check_finite_vector(differences, "differences", min_size=1)
    n = len(d)
    if clusters is None:
        return d.copy()
    strata = np.zeros(n, dtype=object) if strata is None else _labels(strata, n, "strata")
    clusters = _labels(clusters, n, "clusters")
    s_keys, s_idx = np.unique(strata.astype(str), return_inverse=True)
    c_keys, c_idx = np.unique(clusters.astype(str), return_inverse=True)
    sums = np.zeros((len(c_keys), len(s_keys)))
    counts = np.zeros_like(sums)
    np.add.at(sums, (c_idx, s_idx), d)
    np.add.at(counts, (c_idx, s_idx), 1.0)
    if (counts == 0).any():
        missing = [str(c_keys[i]) for i in np.where((counts == 0).any(axis=1))[0]]
        raise ValueError(f"clusters {missing} lack a stratum the others have: every cluster "
                         f"must have a difference in every stratum")
    return (sums / counts).mean(axis=1)


def _normality_p(values: np.ndarray) -> float:
    """Shapiro–Wilk p-value of the cluster means (the t test's own sample); nan with fewer
    than 3 or none varying."""
    if len(values) < 3 or np.ptp(values) <= 1e-12 * max(1.0, float(np.abs(values).max())):
        return float("nan")
    return float(stats.shapiro(values).pvalue)


def paired_t_test(differences, strata=None, clusters=None, confidence: float = 0.95,
                  alternative: str = "two-sided") -> PairedTestResult:
    """Paired t test of the stratified mean difference, on cluster means.

    Each cluster (seed) gives one value, its mean over strata (``cluster_means``); the test
    is the one-sample t test of those n values against 0 (``scipy.stats.ttest_1samp``) with
    its t interval. For a balanced design with a random cluster effect this is the exact
    mixed-model test of the mean. Its assumption — normal cluster means — is checked by a
    Shapiro–Wilk test of those cluster means (``normality_p``; with 3–5 clusters the check
    catches only gross departures, such as one wild seed);
    ``paired_test`` decides what to do when it fails. With n < 2 clusters or sd = 0 no
    noise was measured: p-value and interval are nan, never a zero-width interval.

    Arguments:
        differences, strata, clusters: as ``sign_flip_test``.
        confidence: of the interval, in (0, 1).
        alternative: as in scipy.

    Returns:
        :class:`PairedTestResult` with test "paired t on cluster means".

    Raises:
        ValueError: as ``sign_flip_test`` and ``cluster_means``; ``confidence`` not in (0, 1).

    Source: Student 1908; Shapiro & Wilk 1965.
    """
    confidence = check_confidence(confidence)
    alternative = check_alternative(alternative)
    d = check_finite_vector(differences, "differences", min_size=1)
    values = cluster_means(d, strata, clusters)
    n = len(values)
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if n >= 2 else float("nan")
    normality = _normality_p(values)
    if n < 2 or not sd > 1e-12 * max(1.0, abs(mean)):
        return PairedTestResult("none (no noise measured)", mean, sd, n, float("nan"),
                                float("nan"), float("nan"), normality, float("nan"))
    result = stats.ttest_1samp(values, 0.0, alternative=alternative)
    interval = result.confidence_interval(confidence)
    return PairedTestResult("paired t on cluster means", mean, sd, n, float(interval.low),
                            float(interval.high), float(result.pvalue), normality, 0.0)


def paired_test(differences, strata=None, clusters=None, confidence: float = 0.95,
                alternative: str = "two-sided", normality_alpha: float = 0.05,
                n_resamples: int = 9999, seed: int = 0) -> PairedTestResult:
    """The paired test of the stratified mean difference, chosen by a fixed rule: the paired
    t test on cluster means (``paired_t_test``) unless its normality check rejects at
    ``normality_alpha``; then the sign-flip test flipping whole clusters (``sign_flip_test``),
    which assumes only symmetry (with few clusters it cannot reach small p-values:
    ``min_p_value`` says how small). The interval is the t interval either way.

    Arguments:
        differences, strata, clusters, confidence, alternative: as ``paired_t_test``.
        normality_alpha: level of the Shapiro–Wilk check, in (0, 1).
        n_resamples, seed: of the sign-flip test beyond ``EXACT_LIMIT`` clusters.

    Returns:
        :class:`PairedTestResult`; ``test`` names the test that gave the p-value.

    Raises:
        ValueError: as ``paired_t_test`` and ``sign_flip_test``; ``normality_alpha`` not in
            (0, 1).

    Source: Student 1908; Fisher 1935, §21; Shapiro & Wilk 1965.
    """
    normality_alpha = check_confidence(normality_alpha, "normality_alpha")
    t = paired_t_test(differences, strata, clusters, confidence, alternative)
    if not np.isfinite(t.p_value) or not (np.isfinite(t.normality_p)
                                          and t.normality_p < normality_alpha):
        return t
    flip = sign_flip_test(differences, strata, clusters, alternative, n_resamples, seed)
    name = "sign-flip (exact)" if flip.exact else "sign-flip (Monte Carlo)"
    return t._replace(test=name, p_value=flip.p_value, min_p_value=flip.min_p_value)
