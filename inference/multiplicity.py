"""Family-wise error control over several p-values: Holm's step-down and Bonferroni.

A verdict that combines several claims (or several parts of one claim) is decided on adjusted
p-values, so that the probability of at least one false *supported* / *refuted* in the family
stays ≤ α. The adjusted p-values are those of ``statsmodels.stats.multitest.multipletests``
(the tests check them against it), computed here with numpy for two reasons: many families
are adjusted at once (the last axis is the family, so a simulation adjusts B families in one
call), and multipletests runs ``gc.collect()`` on every Holm call, 30–150 ms each in a
process that has torch loaded, which makes a simulation of 1000 families take minutes.

Untested claims: a NaN p-value marks a claim that was not tested (out of reach, underpowered,
by construction). It is excluded from its family — the family size m counts only the finite
p-values — and its adjusted p-value stays NaN and its reject decision False.

Sources: Holm 1979, "A simple sequentially rejective multiple test procedure", Scandinavian
Journal of Statistics 6; Bonferroni 1936 (the inequality P(∪A_i) ≤ Σ P(A_i)).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference._validation import check_confidence

__all__ = ["MultipleTestResult", "adjust_p_values", "holm", "bonferroni"]

_METHODS = ("holm", "bonferroni")


class MultipleTestResult(NamedTuple):
    """Adjusted p-values of a family: ``reject, p_adjusted = holm(p)``.

    Attributes:
        reject: bool array of the input's shape; True where the adjusted p-value ≤ α
            (always False for a NaN input).
        p_adjusted: float64 array of the input's shape, each ≥ its raw p-value and ≤ 1; NaN
            where the input is NaN. A family's size m is ``np.isfinite(p_adjusted).sum(-1)``.
    """

    reject: np.ndarray
    p_adjusted: np.ndarray


def adjust_p_values(p_values, method: str = "holm", alpha: float = 0.05) -> MultipleTestResult:
    """Adjust families of p-values for multiplicity (Holm or Bonferroni).

    Within a family of m tested p-values: Bonferroni p̃_i = min(1, m·p_i); Holm (step-down),
    with p_(1) ≤ … ≤ p_(m) sorted, p̃_(j) = min(1, max_{i ≤ j} (m − i + 1)·p_(i)). Both
    control the family-wise error at α under any dependence between the tests; Holm rejects
    at least what Bonferroni rejects. A hypothesis is rejected when p̃ ≤ α. NaN entries
    (untested claims) are excluded from their family and stay NaN (see the module docstring).
    Equal to ``multipletests(p, alpha, method)[:2]`` on the finite entries of each family.

    Arguments:
        p_values: array-like of p-values, each in [0, 1] or NaN; the last axis is the family
            (a scalar or 1-D input is one family; shape (B, m) is B families of m); may be
            empty.
        method: ``"holm"`` or ``"bonferroni"``.
        alpha: family-wise error rate, in (0, 1).

    Returns:
        :class:`MultipleTestResult` (reject, p_adjusted), arrays of the input's shape.

    Raises:
        ValueError: if a p-value is outside [0, 1] or ±inf, a value is not a real number,
            ``method`` is not one of the two names, or ``alpha`` is not in (0, 1).

    Source: Holm 1979; Bonferroni 1936.
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    alpha = check_confidence(alpha, "alpha")
    p = np.asarray(p_values)
    if p.dtype == bool or not (np.issubdtype(p.dtype, np.floating)
                               or np.issubdtype(p.dtype, np.integer)):
        raise ValueError(f"p_values must be real numbers in [0, 1] or NaN, got dtype {p.dtype}")
    p = p.astype(np.float64)
    shape = p.shape
    p = np.atleast_1d(p)
    tested = ~np.isnan(p)
    bad = tested & ~((p >= 0.0) & (p <= 1.0))
    if bad.any():
        raise ValueError(f"p_values must be in [0, 1] or NaN (untested); got {p[bad][0]!r}")
    m = tested.sum(axis=-1, keepdims=True)  # (..., 1): family sizes
    if method == "bonferroni":
        adjusted = np.minimum(1.0, m * p)
    else:
        order = np.argsort(p, axis=-1, kind="stable")  # NaN (untested) sort last
        p_sorted = np.take_along_axis(p, order, axis=-1)
        rank = np.arange(p.shape[-1])  # 0-based: multiplier m − rank
        scaled = np.maximum.accumulate(np.maximum(m - rank, 1) * p_sorted, axis=-1)
        adjusted = np.empty_like(p)
        np.put_along_axis(adjusted, order, np.minimum(1.0, scaled), axis=-1)
    adjusted = np.where(tested, np.maximum(adjusted, p), np.nan)
    reject = tested & (np.nan_to_num(adjusted, nan=2.0) <= alpha)
    return MultipleTestResult(reject.reshape(shape), adjusted.reshape(shape))


def holm(p_values, alpha: float = 0.05) -> MultipleTestResult:
    """Holm's step-down adjustment: ``adjust_p_values(p_values, "holm", alpha)``.

    See :func:`adjust_p_values` for shapes, NaN handling and errors.

    Source: Holm 1979.
    """
    return adjust_p_values(p_values, "holm", alpha)


def bonferroni(p_values, alpha: float = 0.05) -> MultipleTestResult:
    """Bonferroni's adjustment: ``adjust_p_values(p_values, "bonferroni", alpha)``.

    See :func:`adjust_p_values` for shapes, NaN handling and errors.

    Source: Bonferroni 1936.
    """
    return adjust_p_values(p_values, "bonferroni", alpha)
