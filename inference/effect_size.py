"""Power of a paired t test: the minimal detectable effect (MDE) at a given number of seeds,
and the number of seeds that brings the MDE down to a smallest effect of interest (SESOI).

Both come from ``statsmodels.stats.power.TTestPower`` (the one-sample / paired t test's
power, by the noncentral t distribution). The effect is in the differences' own unit: the
standardised effect d = effect / sd times the measured seed standard deviation sd.

Source: Cohen 1988, *Statistical Power Analysis for the Behavioral Sciences*, ch. 2;
``experiments.analysis.claims`` (MDE ≤ SESOI for a *supported*).
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from statsmodels.stats.power import TTestPower

from inference._validation import check_alternative, check_confidence

__all__ = ["minimal_detectable_effect", "seeds_needed", "MAX_SEEDS"]

#: The largest seed count ``seeds_needed`` searches.
MAX_SEEDS = 10_000


def _sd(sd) -> float:
    if isinstance(sd, bool) or not isinstance(sd, numbers.Real) or not (0 <= sd < np.inf):
        raise ValueError(f"sd must be a finite real number >= 0, got {sd!r}")
    return float(sd)


def minimal_detectable_effect(sd: float, n: int, alpha: float = 0.05, power: float = 0.8,
                              alternative: str = "two-sided") -> float:
    """The smallest true mean difference a paired t test on ``n`` values with standard
    deviation ``sd`` detects with probability ``power`` at level ``alpha``: d* · sd with d*
    solved by ``TTestPower().solve_power``. In the differences' unit (e.g. Δ ln nMSE).

    Arguments:
        sd: the measured standard deviation of the per-seed differences, finite, ≥ 0.
        n: the number of seeds (paired values), an integer ≥ 2.
        alpha: the test's level, in (0, 1); power: the wanted power, in (0, 1).
        alternative: "two-sided", "greater" or "less" (as in scipy; a one-sided test's power
            is statsmodels' "larger", for an effect in the tested direction).

    Returns:
        float ≥ 0 (0 when sd = 0: no noise measured, which a caller must not read as power).

    Raises:
        ValueError: ``sd`` not finite or negative; ``n`` not an integer ≥ 2; ``alpha`` or
            ``power`` not in (0, 1); a bad ``alternative``.

    Source: Cohen 1988, ch. 2; ``statsmodels.stats.power.TTestPower``.
    """
    sd = _sd(sd)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 2:
        raise ValueError(f"n must be an integer >= 2 (a t test needs two values), got {n!r}")
    alpha = check_confidence(alpha, "alpha")
    power = check_confidence(power, "power")
    side = {"two-sided": "two-sided", "greater": "larger", "less": "larger"}[
        check_alternative(alternative)]
    return _standardised_mde(int(n), alpha, power, side) * sd


@functools.lru_cache(maxsize=1024)
def _standardised_mde(n: int, alpha: float, power: float, side: str) -> float:
    """d* solving power(d*, n, alpha) = power (``TTestPower().solve_power``), cached: it
    depends on the counts and levels only."""
    d = TTestPower().solve_power(effect_size=None, nobs=n, alpha=alpha, power=power,
                                 alternative=side)
    return float(np.asarray(d).item())


def seeds_needed(sesoi: float, sd: float, alpha: float = 0.05, power: float = 0.8,
                 alternative: str = "two-sided", max_seeds: int = MAX_SEEDS) -> int | None:
    """The smallest number of seeds n ≥ 2 at which a paired t test detects a true mean
    difference ``sesoi`` with probability ≥ ``power`` (``TTestPower().power``), given the
    measured per-seed standard deviation ``sd``.

    Arguments:
        sesoi: the smallest effect of interest, > 0, in the differences' unit.
        sd, alpha, power, alternative: as ``minimal_detectable_effect``.
        max_seeds: the largest n searched, ≥ 2.

    Returns:
        int n, or None when even ``max_seeds`` seeds do not reach the power.

    Raises:
        ValueError: ``sesoi`` not finite and > 0; the others as ``minimal_detectable_effect``;
            ``max_seeds`` not an integer ≥ 2.

    Source: Cohen 1988, ch. 2; ``statsmodels.stats.power.TTestPower``.
    """
    if isinstance(sesoi, bool) or not isinstance(sesoi, numbers.Real) \
            or not (0 < sesoi < np.inf):
        raise ValueError(f"sesoi must be a finite real number > 0, got {sesoi!r}")
    sd = _sd(sd)
    if isinstance(max_seeds, bool) or not isinstance(max_seeds, numbers.Integral) \
            or max_seeds < 2:
        raise ValueError(f"max_seeds must be an integer >= 2, got {max_seeds!r}")
    alpha = check_confidence(alpha, "alpha")
    power = check_confidence(power, "power")
    side = {"two-sided": "two-sided", "greater": "larger", "less": "larger"}[
        check_alternative(alternative)]
    if sd == 0:
        return 2
    analysis = TTestPower()
    effect = float(sesoi) / sd

    def reaches(n):
        return analysis.power(effect_size=effect, nobs=n, alpha=alpha,
                              alternative=side) >= power

    high = 2  # power grows with n: double until it reaches, then bisect (statsmodels'
    while not reaches(high):  # power can read nan at huge n, so n is never searched far past
        if high >= max_seeds:
            return None
        high = min(2 * high, int(max_seeds))
    low = max(2, high // 2)
    while low < high:
        mid = (low + high) // 2
        if reaches(mid):
            high = mid
        else:
            low = mid + 1
    return low
