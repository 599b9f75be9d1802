"""Scaling claims: an O(·) statement becomes an exponent measured across settings.

An O(·) claim cannot fail at one point; as a *scaling* claim it can. ``bootstrap_exponent``
fits the slope of log(statistic) against log(x) over a grid of settings, where the statistic
of each setting is computed from independent replicate draws (a quantile of errors, the
smallest sample count reaching a success rate, a median count), and gives a percentile
bootstrap interval by resampling the replicates within each setting. ``decide_exponent``
compares the interval with the claimed exponent by a rule fixed before the run: with margin
δ (pre-registered; half the size of the planted violation, e.g. δ = 0.5 for an exponent off by
one power),

* claim "exponent ≤ a" (an upper bound, e.g. samples O(r^k)): *holds* when the interval's
  upper end ≤ a + δ, *refuted* when its lower end > a + δ;
* claim "exponent ≥ a" (a lower bound, e.g. width Ω(r^k)): *holds* when the lower end ≥ a − δ,
  *refuted* when the upper end < a − δ;
* claim "exponent = a": *holds* when the interval lies inside [a − δ, a + δ], *refuted* when
  it lies wholly outside;

*inconclusive* otherwise.

**p-values.** A check that combines several such parts controls their family-wise error
(Holm) and needs a p-value per part: ``ExponentEstimate.p_value(limit, side)`` is the one-sided
bootstrap p-value from the same resampled slopes the interval comes from — for "exponent ≤
limit", (#{slopes ≤ limit} + 1) / (B + 1) over the B finite slopes (Davison & Hinkley 1997,
§4.4: the Monte Carlo form, never 0). It is never laxer than the interval: p ≤ a implies
that the percentile interval at coverage 1 − 2a excludes the limit (a ≤ 1/2); an interval
that excludes the limit by less than one resampled slope can have p just above a.

Source: ``docs/checks.md`` ("Scaling claims"); Baykal et al. 2022,
Theorem 4.1, Lemma 4.2, Theorem 4.3.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass
from typing import Callable, Sequence

import numpy as np

from routing.validation import check_int, check_real, check_seed
from proofs_checks._framework import CONFIDENCE, Verdict

__all__ = ["ExponentEstimate", "fit_exponent", "bootstrap_exponent", "decide_exponent", "SIDES",
           "OrderStatistic", "InterpolatedQuantile", "bootstrap_p_value"]

#: The three forms of a scaling claim ``decide_exponent`` decides.
SIDES = ("at_most", "at_least", "equal")


@dataclass(frozen=True)
class ExponentEstimate:
    """A fitted exponent with its bootstrap interval.

    Attributes:
        exponent: least-squares slope of log(statistic) on log(x) over the settings.
        ci_low, ci_high: percentile bootstrap interval at ``confidence`` (NaN when fewer
            than two settings have a finite statistic in too many resamples).
        n_boot: bootstrap resamples. confidence: the interval's coverage.
        x, statistic: the settings and the statistic at each (NaN where not reached).
        draws: (init only) the resampled slopes, float (n_boot,) (NaN where a resample left
            fewer than two finite settings); kept on the object for ``p_value`` but not a
            field, so a result's JSON does not carry them. None: an estimate built by hand.
    """

    exponent: float
    ci_low: float
    ci_high: float
    n_boot: int
    confidence: float
    x: tuple[float, ...]
    statistic: tuple[float, ...]
    draws: InitVar[np.ndarray | None] = None

    def __post_init__(self, draws):
        if draws is not None:
            draws = np.asarray(draws, np.float64).ravel()
        object.__setattr__(self, "_draws", draws)

    def text(self) -> str:
        """'1.02 [0.95, 1.10]'."""
        return f"{self.exponent:.3g} [{self.ci_low:.3g}, {self.ci_high:.3g}]"

    def p_value(self, limit: float, side: str = "at_most") -> float:
        """One-sided bootstrap p-value of the claim "exponent ≤ limit" (side "at_most";
        small values: the exponent exceeds the limit) or "exponent ≥ limit" ("at_least"),
        from the resampled slopes the interval comes from (``bootstrap_p_value``).

        Returns:
            float in (0, 1]; NaN when the interval is NaN (too few finite resamples: the
            estimate decides nothing).

        Raises:
            ValueError: an estimate without its resampled slopes (built by hand or read back
                from JSON), a side other than "at_most"/"at_least", a non-finite limit.
        """
        if self._draws is None:
            raise ValueError("this estimate has no resampled slopes (build it with "
                             "bootstrap_exponent) to compute a p-value from")
        if not (np.isfinite(self.ci_low) and np.isfinite(self.ci_high)):
            return float("nan")
        return bootstrap_p_value(self._draws, limit, side)


def fit_exponent(x, y, offset=None) -> float:
    """Least-squares slope of log(y) − log(offset) on log(x) (NaN with < 2 finite points).

    Arguments:
        x, y: positive arrays of the same length (points with a non-finite or non-positive x
            or y are dropped).
        offset: optional positive array dividing y first (e.g. the log factor ln r of an
            O(r^k log r) claim).

    Returns:
        The slope (float).
    """
    y = np.asarray(y, np.float64)
    return float(_slopes(x, y.reshape(1, -1), offset)[0])


def _slopes(x, y: np.ndarray, offset=None) -> np.ndarray:
    """``fit_exponent(x, y[b], offset)`` for every row b of y float (B, S), at once: the
    least-squares slope of log y on log x over each row's points with a finite positive x
    and y, in closed form; NaN for a row with < 2 such points or one distinct x among
    them."""
    x = np.asarray(x, np.float64)
    if offset is not None:
        y = y / np.asarray(offset, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = np.isfinite(y) & (y > 0) & np.isfinite(x) & (x > 0)
        log_x = np.where(ok, np.log(np.where(ok, x, 1.0)), 0.0)
        log_y = np.where(ok, np.log(np.where(ok, y, 1.0)), 0.0)
        count = ok.sum(axis=1)
        mean_x = log_x.sum(axis=1) / count
        mean_y = log_y.sum(axis=1) / count
        dx = np.where(ok, log_x - mean_x[:, None], 0.0)
        slope = (dx * (log_y - mean_y[:, None])).sum(axis=1) / (dx * dx).sum(axis=1)
    spread = (np.where(ok, log_x, -np.inf).max(axis=1)
              - np.where(ok, log_x, np.inf).min(axis=1))
    return np.where((count >= 2) & (spread > 0), slope, np.nan)


class OrderStatistic:
    """The ⌈q·D⌉-th smallest of D draws (the inverted-CDF q-quantile: an observed value; inf
    and NaN sort last), raised to ``power``: a statistic of ``bootstrap_exponent`` that it
    computes for all resamples of a setting at once (``batch``), equal bit for bit to one
    call per resample.

    Arguments:
        quantile: q in (0, 1].
        power: exponent e > 0 applied last (Python's ``float ** e``, as a scalar statistic
            writes it); 1 leaves the value as it is.

    Raises:
        ValueError: q outside (0, 1], a power not a finite real > 0.

    Source: the per-draw quantiles of the Theorem 4.1, 4.3 and Lemma 4.2 checks (Baykal et
    al. 2022), the statistic ``_nstar.quantile_count`` computes.
    """

    def __init__(self, quantile: float, power: float = 1.0):
        self.quantile = check_real(quantile, "quantile", 0.0, 1.0, low_open=True)
        self.power = check_real(power, "power", 0.0, None, low_open=True)

    def index(self, n: int) -> int:
        """The 0-based rank of the statistic among n ≥ 1 sorted draws."""
        return max(1, math.ceil(self.quantile * n - 1e-9)) - 1

    def _raise(self, values: np.ndarray) -> np.ndarray:
        if self.power == 1.0:
            return values
        return np.array([v ** self.power for v in values.tolist()], np.float64)

    def __call__(self, values) -> float:
        """The statistic of float (D,) draws, D ≥ 1."""
        v = np.asarray(values, np.float64).ravel()
        if v.size == 0:
            raise ValueError("values must not be empty")
        i = self.index(v.size)
        return float(self._raise(np.partition(v, i)[i:i + 1])[0])

    def batch(self, values) -> np.ndarray:
        """The statistic of each row of float (B, D) draws: float64 (B,)."""
        v = np.asarray(values, np.float64)
        i = self.index(v.shape[1])
        return self._raise(np.partition(v, i, axis=1)[:, i])


class InterpolatedQuantile(OrderStatistic):
    """``np.quantile(values, q)`` (linear interpolation between the order statistics around
    q·(D − 1)), raised to ``power``, with the same batch form as ``OrderStatistic``.

    Source: the per-draw diameter and bucket-count quantiles of the Lemma 4.2 checks.
    """

    def _interpolate(self, v: np.ndarray) -> np.ndarray:
        """Rows of sorted float (B, D) draws -> float64 (B,)."""
        pos = self.quantile * (v.shape[1] - 1)
        i = int(pos)
        if i + 1 >= v.shape[1]:
            return v[:, -1]
        return v[:, i] + (pos - i) * (v[:, i + 1] - v[:, i])

    def __call__(self, values) -> float:
        v = np.asarray(values, np.float64).ravel()
        if v.size == 0:
            raise ValueError("values must not be empty")
        return float(self.batch(v.reshape(1, -1))[0])

    def batch(self, values) -> np.ndarray:
        return self._raise(self._interpolate(np.sort(np.asarray(values, np.float64), axis=1)))


def bootstrap_p_value(draws, limit: float, side: str = "at_most") -> float:
    """One-sided bootstrap p-value of a bound on a parameter from its resampled estimates.

    For the claim "parameter ≤ limit" (side "at_most") p = (#{draws ≤ limit} + 1) / (B + 1),
    for "parameter ≥ limit" ("at_least") p = (#{draws ≥ limit} + 1) / (B + 1), over the B
    finite draws: the share of resamples on the claim's side of the limit, in the Monte Carlo
    form that is never 0. p ≤ a holds exactly when the ⌊a(B + 1)⌋-th smallest draw exceeds
    the limit (at_most), so p ≤ a implies that the percentile interval of coverage 1 − 2a
    (``np.quantile``'s linear interpolation) excludes the limit, for a ≤ 1/2.

    Arguments:
        draws: float (B,) resampled estimates (e.g. bootstrap slopes); NaN/inf ignored.
        limit: the claimed bound, finite.
        side: "at_most" or "at_least".

    Returns:
        float in (0, 1] (1 when no draw is finite).

    Raises:
        ValueError: a side other than "at_most"/"at_least", a non-finite limit.

    Source: Davison & Hinkley 1997, *Bootstrap Methods and their Application*, §4.4 (the
    (1 + count)/(B + 1) Monte Carlo p-value); Efron & Tibshirani 1993, §16.
    """
    if side not in ("at_most", "at_least"):
        raise ValueError(f"side must be 'at_most' or 'at_least', got {side!r}")
    limit = check_real(limit, "limit")
    d = np.asarray(draws, np.float64).ravel()
    d = d[np.isfinite(d)]
    count = np.count_nonzero(d <= limit) if side == "at_most" else np.count_nonzero(d >= limit)
    return float((count + 1) / (d.size + 1))


def bootstrap_exponent(x: Sequence[float], replicates: Sequence[np.ndarray],
                       statistic: Callable[[np.ndarray], float], n_boot: int = 2000,
                       seed: int = 0, confidence: float = CONFIDENCE,
                       offset: Sequence[float] | None = None) -> ExponentEstimate:
    """Exponent of ``statistic(replicates)`` in x, with a bootstrap over the replicates.

    Arguments:
        x: (S,) positive settings (e.g. L√d/ε).
        replicates: S arrays; array s holds the independent draws at setting s (first axis
            = draws), e.g. float (n_draws,) per-draw smallest sample counts.
        statistic: array of draws -> positive float (NaN/inf: not reached at that setting);
            one with a ``batch`` method (``OrderStatistic``) is computed for every resample
            of a setting at once, from the same resamples.
        n_boot: resamples (≥ 100); each resamples every setting's draws with replacement.
        seed: seed of the resampling.
        confidence: coverage of the percentile interval.
        offset: optional (S,) positive divisors of the statistic (a log factor).

    Returns:
        ``ExponentEstimate``; its interval is NaN when more than 5 % of resamples leave fewer
        than two settings with a finite statistic. It keeps the resampled slopes for
        ``ExponentEstimate.p_value``.

    Raises:
        ValueError: mismatched lengths, fewer than 2 settings, n_boot < 100, bad seed.
    """
    x = np.asarray(x, np.float64)
    if x.ndim != 1 or x.size < 2 or len(replicates) != x.size:
        raise ValueError(f"x and replicates must be (S,) with S ≥ 2 and equal lengths, got "
                         f"{x.shape} and {len(replicates)}")
    if not np.all(np.isfinite(x) & (x > 0)):
        raise ValueError("x must be positive and finite")
    n_boot = check_int(n_boot, "n_boot", 100)
    confidence = check_real(confidence, "confidence", 0.0, 1.0, low_open=True, high_open=True)
    rng = np.random.default_rng(check_seed(seed))
    reps = [np.asarray(r) for r in replicates]
    if any(len(r) == 0 for r in reps):
        raise ValueError("every setting needs at least one replicate")
    stat = np.array([statistic(r) for r in reps], np.float64)
    slope = fit_exponent(x, stat, offset)
    if hasattr(statistic, "batch") and all(r.ndim == 1 for r in reps):
        # the same draws in the same order as the loop below; the statistic then once per
        # setting over its (n_boot, draws) resamples
        picks = [np.empty((n_boot, len(r)), np.int64) for r in reps]
        for b in range(n_boot):
            for pick, r in zip(picks, reps):
                pick[b] = rng.integers(0, len(r), len(r))
        resampled = np.column_stack([statistic.batch(r[pick]) for pick, r in zip(picks, reps)])
    else:
        resampled = np.array([[statistic(r[rng.integers(0, len(r), len(r))]) for r in reps]
                              for _ in range(n_boot)], np.float64)  # (n_boot, S)
    boots = _slopes(x, resampled, offset)
    finite = boots[np.isfinite(boots)]
    if finite.size < 0.95 * n_boot:
        low = high = float("nan")
    else:
        alpha = 1.0 - confidence
        low, high = (float(v) for v in np.quantile(finite, [alpha / 2, 1 - alpha / 2]))
    return ExponentEstimate(slope, low, high, n_boot, confidence, tuple(x.tolist()),
                            tuple(stat.tolist()), draws=boots)


def decide_exponent(estimate: ExponentEstimate, claimed: float, margin: float,
                    side: str) -> Verdict:
    """Decide a scaling claim from an exponent's interval (rule in the module docstring).

    Arguments:
        estimate: the fitted exponent and interval.
        claimed: the claimed exponent a.
        margin: δ ≥ 0, fixed before the run.
        side: "at_most", "at_least" or "equal".

    Returns:
        HOLDS, REFUTED or INCONCLUSIVE (INCONCLUSIVE when the interval is NaN).

    Raises:
        ValueError: an unknown side or a negative margin.
    """
    if side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    margin = check_real(margin, "margin", 0.0, None)
    lo, hi = estimate.ci_low, estimate.ci_high
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return Verdict.INCONCLUSIVE
    if side == "at_most":
        limit = claimed + margin
        return Verdict.HOLDS if hi <= limit else Verdict.REFUTED if lo > limit else \
            Verdict.INCONCLUSIVE
    if side == "at_least":
        limit = claimed - margin
        return Verdict.HOLDS if lo >= limit else Verdict.REFUTED if hi < limit else \
            Verdict.INCONCLUSIVE
    if claimed - margin <= lo and hi <= claimed + margin:
        return Verdict.HOLDS
    if hi < claimed - margin or lo > claimed + margin:
        return Verdict.REFUTED
    return Verdict.INCONCLUSIVE
