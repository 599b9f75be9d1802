"""The smallest sample count n*(ε, k) of an LSH learner, and its scaling in r = L√d/ε.

Shared by the checks of Theorem 4.1 (inputs uniform on a k-dimensional subspace) and
Theorem B.1 (inputs on a curved k-manifold) of Baykal et al. 2022. Both claim that the
single-table LSH learner reaches ℓ∞ error ≤ ε with probability ≥ 0.8 from O(k r^k log r)
samples with a table of O(r^k) non-empty buckets, r = L√d/ε. An O(·) claim cannot fail at one
point; it is tested as a scaling claim: per k, the exponents of n*/ln r and of the table size
in r must be ≤ k, up to a margin δ fixed before the run.

**The learner** (the theorem's, one table): ``EuclideanLSH(d, m = C·k, width w(k, ε))``,
default w = c_w·ε/L, and the bucket means of ``LSHTable(hasher, degree=0)`` — a query in an
empty bucket gets the global mean of y, ``LSHTable``'s fallback. The check computes the bucket
means of the test points with ``BucketMeans`` (counts and sums of the test points' buckets,
fed one prefix at a time) and compares them with ``LSHTable.fit(...).predict`` on the first
trained draw of every setting (a ``RuntimeError`` beyond 1e-9).

**One draw** = one hasher and one i.i.d. training stream (the theorem's probability is over
both; the input set, the target and the ``n_test`` test points are fixed per k). The learner
is fed nested prefixes of the stream — every n of the geometric grid
n_j = ⌈grid_start·grid_ratio^j⌉ costs only its new points — and after each prefix the ℓ∞
error is the largest |prediction − f| over the test points. The draw's n_i is the first grid n
at which that error is ≤ ε (first passage). A draw stops without success

* at a *floor* — it can never succeed: two test points of one bucket whose targets differ by
  more than 2ε (no bucket value is within ε of both), or a test point whose error exceeds ε by
  ``floor_z`` standard errors of its bucket mean (≥ 20 points; the mean tends to E[f | bucket]
  and its error will stay above ε) — n_i = ∞;
* at the cap (*censored*): n_i > cap.

**n*(ε, k)** = the smallest grid n at which the success fraction over the draws is ≥ 0.8 =
the ⌈0.8·D⌉-th smallest n_i of D draws (``quantile_count``). In the exponent fits floors and
censored draws enter as the first grid value beyond the cap, a lower bound of their n_i.

**Calibration / validation.** The exponent needs no constant, but the sample cap does: on
``n_calibration`` draws of their own (seeds disjoint from the validation draws) at the
largest ε of each k — the calibration setting — the constant Ĉ_n = n*/(k r^k ln r) of the
draws that are not at a floor is measured, and every validation setting (every ε of k's grid,
fresh draws) gets the cap ``cap_factor``·Ĉ_n·k r^k ln r (≤ ``max_samples``): ``cap_factor``
times what the claim predicts with the calibrated constant. If the calibration setting's
n* is itself beyond ``calibration_cap``, k is *out of reach* (with the samples that would be
needed, extrapolated from the failing test points). The reported constants C_n are those of
the validation settings.

**Decision per k** (claimed exponent a = k, margin δ; ``decide_censored_exponent``):

* samples: the exponent of n*/ln r in r with a percentile bootstrap over the draws
  (``proofs_checks._scaling.bootstrap_exponent``) is judged by
  ``decide_exponent(estimate, a, δ, "at_most")`` — holds when the upper end ≤ a + δ, refuted
  when the lower end > a + δ, inconclusive otherwise — with the lower-bounded draws accounted
  for: at a setting above the mean log r a lower-bounded statistic can only lower the fitted
  slope, below it only raise it. With c_s such draws of D at setting s, a resample's
  statistic is lower-bounded there with probability P(Binomial(D, c_s/D) ≥ D − ⌈0.8 D⌉ + 1);
  *holds* needs that probability, over the settings above the mean log r, ≤ 2.5 %; *refuted*
  needs the same below the mean; a verdict thus blocked, or a setting whose n* itself is
  beyond its cap, is *out of reach*;
* table size (non-empty buckets when the draw first succeeds, at the cap when censored;
  floors left out, their early stop bounds nothing): the same rule, exponent of the table
  size in r against a + δ;
* floors: at any ε, refuted when the Clopper–Pearson upper end (95 %) of the fraction of
  draws not at a floor is < 0.8 (no sample count can then reach the claimed probability).

k's verdict combines the three; the claim's verdict combines every decided k (with
``stop_at_refutation`` the later k and the probes are not measured once one k is refuted).
*Probes* (``probes``) are k measured at one calibration setting only: n*, C_n, table size,
or out of reach — reported, not decided.

Source: Baykal et al. 2022, Theorem 4.1, Theorem B.1 (§4), Lemma 4.2; ``docs/checks.md``.
"""

from __future__ import annotations

import math
import pathlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy import stats

from routing.validation import check_bool, check_int, check_real
from proofs_checks._framework import (
    CONFIDENCE, Check, CheckParams, CheckResult, Verdict, child_seeds, combine_verdicts,
    decide_probability,
)
from proofs_checks._first_passage import (BucketMeans, DrawOutcome, _needed_by_extrapolation,
                                          _Stream, first_success, spread_floor)
from proofs_checks._plots import plt, save_figure
from proofs_checks._scaling import (ExponentEstimate, OrderStatistic, bootstrap_exponent,
                                    decide_exponent)
from proofs_checks.op_counts import lsh_forward_ops
from routing.euclidean_lsh import EuclideanLSH

__all__ = [
    "NStarParams", "NStarCheck", "RidgeTarget", "TheoremWidth", "AllSamples", "BucketMeans",
    "DrawOutcome", "sample_grid", "next_grid_value", "spread_floor", "first_success",
    "quantile_count", "theorem_samples", "censored_resample_probability",
    "decide_censored_exponent", "default_hasher",
]


def theorem_samples(constant: float, k: int, dim: int, lipschitz: float, epsilon: float) -> int:
    """⌈constant · k r^k ln r⌉ with r = L√d/ε: Theorem 4.1's sample count with a constant.

    Raises:
        ValueError: constant ≤ 0, k or dim < 1, L or ε ≤ 0, or r ≤ 1 (log not positive).
    """
    constant = check_real(constant, "constant", 0.0, None, low_open=True)
    k, dim = check_int(k, "k", 1), check_int(dim, "dim", 1)
    r = check_real(lipschitz, "lipschitz", 0.0, None, low_open=True) * math.sqrt(dim) / check_real(
        epsilon, "epsilon", 0.0, None, low_open=True)
    if r <= 1:
        raise ValueError(f"L√d/ε must exceed 1, got {r:g}")
    return max(1, math.ceil(constant * k * r**k * math.log(r)))


def sample_grid(start: int, stop: int, ratio: float) -> np.ndarray:
    """The geometric grid of sample counts ⌈start·ratio^j⌉ ≤ stop, duplicates removed.

    Arguments:
        start: first count, ≥ 1. stop: largest allowed count, ≥ start. ratio: > 1.

    Returns:
        int64 (J,), strictly increasing, first entry ``start``.

    Raises:
        ValueError: arguments out of range.
    """
    start = check_int(start, "start", 1)
    stop = check_int(stop, "stop", start)
    ratio = check_real(ratio, "ratio", 1.0, None, low_open=True)
    j = int(math.floor(math.log(stop / start) / math.log(ratio) + 1e-9)) + 1
    grid = np.ceil(start * ratio ** np.arange(j + 1) - 1e-9).astype(np.int64)
    return np.unique(grid[grid <= stop])


def next_grid_value(start: int, stop: int, ratio: float) -> int:
    """The first value of the grid of ``sample_grid(start, ·, ratio)`` that exceeds ``stop``
    (the lower bound of a censored draw's n_i)."""
    grid = sample_grid(start, max(stop, start) * 2 + 2, ratio)
    return int(grid[grid > stop][0])


def quantile_count(values, probability: float = 0.8) -> float:
    """The smallest value v of ``values`` with fraction(values ≤ v) ≥ ``probability``:
    the ⌈probability·D⌉-th smallest of D values (inf/censored values allowed).

    Arguments:
        values: 1-D array of D ≥ 1 per-draw values.
        probability: in (0, 1].

    Returns:
        float.

    Raises:
        ValueError: empty values or probability outside (0, 1].
    """
    values = np.asarray(values, np.float64).ravel()
    if values.size == 0:
        raise ValueError("values must not be empty")
    probability = check_real(probability, "probability", 0.0, 1.0, low_open=True)
    return OrderStatistic(probability)(values)


def censored_resample_probability(n_censored: int, n_draws: int, probability: float) -> float:
    """P(the ⌈probability·D⌉-th smallest of a bootstrap resample of D draws is censored) when
    ``n_censored`` of the D draws are: P(Binomial(D, c/D) ≥ D − ⌈probability·D⌉ + 1).

    Raises:
        ValueError: counts out of range.
    """
    n_draws = check_int(n_draws, "n_draws", 1)
    n_censored = check_int(n_censored, "n_censored", 0, n_draws)
    j = max(1, math.ceil(probability * n_draws - 1e-9))
    return float(stats.binom.sf(n_draws - j, n_draws, n_censored / n_draws))


def decide_censored_exponent(estimate: ExponentEstimate, censored, n_draws,
                             claimed: float, margin: float, probability: float,
                             confidence: float = CONFIDENCE) -> tuple[Verdict, dict]:
    """The module docstring's rule: an at-most exponent claim from possibly censored settings.

    A censored draw enters at a lower bound of its n_i. Where a resample's statistic is
    censored at a setting whose log r lies above the mean log r of the fit, the fitted slope
    can only be too low; below the mean, only too high. Hence:

    * holds: upper end ≤ a + δ, and P_high ≤ (1 − confidence)/2;
    * refuted: lower end > a + δ, and P_low ≤ (1 − confidence)/2;
    * otherwise out of reach when a point statistic is censored or P_high is too large for
      a certified *holds*, else inconclusive;

    with P_high (P_low) the probability that a bootstrap resample has a censored statistic
    at some setting above (below) the mean log r (``censored_resample_probability``).

    Arguments:
        estimate: ``bootstrap_exponent`` of the settings (censored draws at their lower bound).
        censored: (S,) censored draws per setting, in the order of ``estimate.x``.
        n_draws: draws per setting D (one int, or (S,) ints).
        claimed: the claimed exponent a. margin: δ ≥ 0.
        probability: the quantile of the statistic (0.8).
        confidence: the bootstrap interval's coverage.

    Returns:
        (verdict, info): HOLDS / REFUTED / INCONCLUSIVE / OUT_OF_REACH and a dict with
        ``censored_settings`` (indices whose point statistic is censored), ``p_high``,
        ``p_low``, ``limit`` = a + δ and ``censored_draws``.

    Raises:
        ValueError: a negative margin or mismatched lengths.
    """
    margin = check_real(margin, "margin", 0.0, None)
    if len(censored) != len(estimate.x):
        raise ValueError(f"censored must have one count per setting ({len(estimate.x)}), "
                         f"got {len(censored)}")
    draws = [n_draws] * len(censored) if np.ndim(n_draws) == 0 else list(n_draws)
    if len(draws) != len(censored):
        raise ValueError("n_draws must be one count or one per setting")
    point = [i for i, (c, d) in enumerate(zip(censored, draws))
             if c >= d - max(1, math.ceil(probability * d - 1e-9)) + 1]
    x = np.log(np.asarray(estimate.x))
    p_s = np.array([censored_resample_probability(c, d, probability)
                    for c, d in zip(censored, draws)])
    above, below = x > x.mean() + 1e-12, x < x.mean() - 1e-12
    p_high = 1.0 - float(np.prod(1.0 - p_s[above]))
    p_low = 1.0 - float(np.prod(1.0 - p_s[below]))
    limit = claimed + margin
    tolerance = (1.0 - confidence) / 2
    info = {"censored_settings": point, "p_high": p_high, "p_low": p_low, "limit": limit,
            "censored_draws": list(censored)}
    base = decide_exponent(estimate, claimed, margin, "at_most")
    if base == Verdict.HOLDS and p_high <= tolerance:
        return Verdict.HOLDS, info
    if base == Verdict.REFUTED and p_low <= tolerance:
        return Verdict.REFUTED, info
    if point or p_high > tolerance:
        return Verdict.OUT_OF_REACH, info
    return Verdict.INCONCLUSIVE, info


class RidgeTarget:
    """f(x) = L·⟨u, x⟩ with a unit vector u: L-Lipschitz on all of R^d (‖∇f‖ = L).

    Why this target: the learner's empty-bucket fallback (the global mean of y) is then wrong
    by more than ε on all of the input set except a band of width ≈ 2ε/L around one level
    set, so every empty bucket counts at every ε of the grid (no change of regime with ε), and
    inside a bucket the error is L times the bucket's extent along u (slope L everywhere, the
    hard case for bucket means).

    Arguments:
        direction: (dim,) nonzero; normalised to u.
        lipschitz: L > 0.

    Raises:
        ValueError: a zero or non-finite direction, L ≤ 0.
    """

    def __init__(self, direction, lipschitz: float = 1.0):
        u = np.asarray(direction, np.float64).ravel()
        norm = float(np.linalg.norm(u))
        if not np.isfinite(u).all() or norm == 0.0:
            raise ValueError("direction must be a finite nonzero vector")
        self.direction = u / norm
        self.lipschitz = check_real(lipschitz, "lipschitz", 0.0, None, low_open=True)
        self.lipschitz_bound = self.lipschitz

    def __call__(self, X) -> np.ndarray:
        """(N, dim) -> float64 (N,)."""
        return self.lipschitz * (np.asarray(X, np.float64) @ self.direction)

    @classmethod
    def in_span(cls, frame, lipschitz: float, seed: int) -> "RidgeTarget":
        """A ridge along a random unit vector of span(frame), frame (dim, j)."""
        frame = np.asarray(frame, np.float64)
        g = np.random.default_rng(seed).standard_normal(frame.shape[1])
        return cls(frame @ g, lipschitz)


@dataclass(frozen=True)
class TheoremWidth:
    """The theorem's bucket width w = c_w·ε/L (Lemma 4.2: buckets of diameter ∝ ε).

    Arguments:
        constant: c_w > 0. lipschitz: L > 0.
    """

    constant: float
    lipschitz: float

    def __call__(self, k: int, epsilon: float) -> float:
        """Width for subspace dimension k and accuracy ε (units of x)."""
        return self.constant * epsilon / self.lipschitz


@dataclass(frozen=True)
class AllSamples:
    """The theorem's learner uses every training point: keep probability 1."""

    def __call__(self, k: int, epsilon: float) -> float:
        """Probability that a training point is used: 1."""
        return 1.0


def default_hasher(dim: int, n_hashes: int, width: float, seed: int) -> EuclideanLSH:
    """The theorem's hasher: one table of ``n_hashes`` Euclidean hashes of ``width``."""
    return EuclideanLSH(dim, n_hashes, width, n_tables=1, seed=seed)



@dataclass(frozen=True)
class NStarParams(CheckParams):
    """Settings of an n*(ε, k) scaling check (defaults: the quick preset of Theorem 4.1).

    Attributes:
        dim: ambient dimension d.
        lipschitz: L of the target.
        C: hashes per intrinsic dimension (m = C·k), Lemma 4.2's constant.
        width_constant: c_w of the width w = c_w·ε/L.
        epsilons: ((k, (ε_0, ε_1, ...)), ...): the decided k, each with its grid of ε,
            decreasing; ε_0 is also the calibration setting.
        probes: ((k, ε), ...): k measured at one calibration setting only (n*, C_n, table
            size, or out of reach with the samples needed), reported, not decided.
        probability: the claimed success probability (0.8).
        n_draws: validation draws per (k, ε).
        n_calibration: calibration draws at ε_0 of each k.
        n_test: fixed fresh test points per k for the ℓ∞ error.
        grid_start, grid_ratio: the geometric grid of sample counts.
        calibration_cap: samples per calibration draw at most.
        cap_factor: validation cap = cap_factor·Ĉ_n·k r^k ln r.
        max_samples: samples per validation draw at most, whatever the cap rule says.
        margin: δ of the exponent rule.
        floor_z: a draw is at a floor when a test point's error exceeds ε by this many
            standard errors of its bucket mean (≥ 20 points in the bucket).
        n_boot: bootstrap resamples.
        n_power: planted runs per planted violation.
        stop_at_refutation: stop measuring later k once one k is refuted.
    """

    dim: int = 8
    lipschitz: float = 1.0
    C: int = 4
    width_constant: float = 0.75
    epsilons: tuple = ((1, (0.7071, 0.5, 0.3536, 0.25, 0.1768, 0.125, 0.0884)),)
    probes: tuple = ((2, 0.7071), (3, 1.0))
    probability: float = 0.8
    n_draws: int = 60
    n_calibration: int = 10
    n_test: int = 1000
    grid_start: int = 16
    grid_ratio: float = 2 ** 0.125
    calibration_cap: int = 500_000
    cap_factor: float = 16.0
    max_samples: int = 4_000_000
    margin: float = 0.5
    floor_z: float = 5.0
    n_boot: int = 1000
    n_power: int = 14
    stop_at_refutation: bool = True

    @property
    def ks(self) -> tuple[int, ...]:
        """The intrinsic dimensions k, in run order."""
        return tuple(k for k, _ in self.epsilons)

    def max_k(self) -> int:
        """The largest k the inputs allow (here min(d, 8), ``UniformSubspace``'s range)."""
        return min(self.dim, 8)

    def validate(self) -> None:
        """Raise ValueError naming the first parameter out of range."""
        max_k = self.max_k()
        check_int(self.dim, "dim", 1, 4096)
        check_real(self.lipschitz, "lipschitz", 0.0, None, low_open=True)
        check_int(self.C, "C", 1)
        check_real(self.width_constant, "width_constant", 0.0, None, low_open=True)
        if not self.epsilons:
            raise ValueError("epsilons must list at least one (k, (ε, ...)) entry")
        seen = set()
        for k, eps in self.epsilons:
            check_int(k, "epsilons[i][0] (k)", 1, max_k)
            if k in seen:
                raise ValueError(f"epsilons lists k={k} twice")
            seen.add(k)
            if len(eps) < 2:
                raise ValueError(f"epsilons for k={k} needs at least 2 values of ε, got {eps}")
            for e in eps:
                check_real(e, "epsilons[i][1][j] (epsilon)", 0.0,
                           self.lipschitz * math.sqrt(self.dim), low_open=True, high_open=True)
            if list(eps) != sorted(eps, reverse=True) or len(set(eps)) != len(eps):
                raise ValueError(f"epsilons for k={k} must be strictly decreasing, got {eps}")
        for k, e in self.probes:
            check_int(k, "probes[i][0] (k)", 1, max_k)
            check_real(e, "probes[i][1] (epsilon)", 0.0,
                       self.lipschitz * math.sqrt(self.dim), low_open=True, high_open=True)
        check_real(self.probability, "probability", 0.0, 1.0, low_open=True, high_open=True)
        check_int(self.n_draws, "n_draws", 2)
        check_int(self.n_calibration, "n_calibration", 1)
        check_int(self.n_test, "n_test", 1)
        check_int(self.grid_start, "grid_start", 1)
        check_real(self.grid_ratio, "grid_ratio", 1.0, 4.0, low_open=True)
        check_int(self.calibration_cap, "calibration_cap", self.grid_start)
        check_real(self.cap_factor, "cap_factor", 1.0, None)
        check_int(self.max_samples, "max_samples", self.grid_start)
        check_real(self.margin, "margin", 0.0, None)
        check_real(self.floor_z, "floor_z", 0.0, None, low_open=True)
        check_int(self.n_boot, "n_boot", 100)
        check_int(self.n_power, "n_power", 1)
        check_bool(self.stop_at_refutation, "stop_at_refutation")


@dataclass
class _Setting:
    k: int
    epsilon: float
    r: float
    cap: int
    outcomes: list = field(default_factory=list)

    @property
    def n(self) -> np.ndarray:
        return np.array([o.n for o in self.outcomes])

    @property
    def censored(self) -> int:
        """Draws without a finite n_i (at the cap or at a floor)."""
        return int(np.sum(~np.isfinite(self.n)))

    @property
    def floors(self) -> int:
        """Draws at a floor."""
        return int(sum(o.floor for o in self.outcomes))


class NStarCheck(Check):
    """Base class of the n*(ε, k) scaling checks (method in the module docstring).

    Subclasses set ``name``, ``claim``, ``source``, ``Params`` and implement
    ``make_inputs(k, seed)`` -> (input distribution with ``sample(n, seed)``, (dim, j) frame
    spanning its tangent directions for the ridge target).

    Arguments:
        params: the subclass's ``Params``.
        hasher_factory: (dim, n_hashes, width, seed) -> hasher (default ``default_hasher``).
        width_rule: (k, ε) -> bucket width (default ``TheoremWidth(c_w, L)``).
        keep_rule: (k, ε) -> probability that the learner uses a training point (default
            ``AllSamples()``: 1, the theorem's learner).
    """

    def __init__(self, params=None, hasher_factory: Callable | None = None,
                 width_rule: Callable | None = None, keep_rule: Callable | None = None):
        super().__init__(params)
        p = self.params
        self.hasher_factory = hasher_factory or default_hasher
        self.width_rule = width_rule or TheoremWidth(p.width_constant, p.lipschitz)
        self.keep_rule = keep_rule or AllSamples()

    # ------------------------------------------------------------------ hooks
    def make_inputs(self, k: int, seed: int):  # pragma: no cover - abstract
        raise NotImplementedError

    def reference_epsilons(self) -> tuple[tuple[int, float], ...]:
        """(k, ε_0(k)): the calibration ε of each decided k and the ε of each probe (where
        planted objects are anchored: there they equal the theorem's)."""
        return (tuple((k, float(eps[0])) for k, eps in self.params.epsilons)
                + tuple((k, float(e)) for k, e in self.params.probes))

    # ------------------------------------------------------------------ measurement
    def r(self, epsilon: float) -> float:
        """L√d/ε."""
        p = self.params
        return p.lipschitz * math.sqrt(p.dim) / epsilon

    def make_target(self, frame, seed: int):
        """The target on the inputs whose tangent directions span ``frame`` (dim, j): here a
        ``RidgeTarget`` along a random unit vector of span(frame); subclasses may draw other
        L-Lipschitz families."""
        return RidgeTarget.in_span(frame, self.params.lipschitz, seed)

    def _problem(self, k: int, seed: int):
        p = self.params
        inputs, frame = self.make_inputs(k, child_seeds(seed, 1, 1, k)[0])
        target = self.make_target(frame, child_seeds(seed, 1, 2, k)[0])
        X_test = inputs.sample(p.n_test, seed=child_seeds(seed, 1, 3, k)[0])
        return inputs, target, X_test, target(X_test)

    def measure_setting(self, problem, k: int, epsilon: float, cap: int, seeds,
                        stream_seed: int, stop_censored: bool = False) -> _Setting:
        """Run one draw per seed at (k, ε) with sample cap ``cap``; the draws take their
        training points one after the other from one stream (seed ``stream_seed``), so they
        are independent. The first draw is checked against ``LSHTable``.

        ``stop_censored``: stop once the ⌈0.8·D⌉-th smallest n_i is certainly censored
        (used only where no bootstrap follows: the calibration setting).

        Raises:
            RuntimeError: the bucket means disagree with ``LSHTable`` (beyond 1e-9).
        """
        p = self.params
        inputs, target, X_test, y_test = problem
        grid = sample_grid(p.grid_start, cap, p.grid_ratio)
        setting = _Setting(k, epsilon, self.r(epsilon), int(grid[-1]))
        j = max(1, math.ceil(p.probability * len(seeds) - 1e-9))
        width = self.width_rule(k, epsilon)
        keep = self.keep_rule(k, epsilon)
        stream = _Stream(inputs, stream_seed)
        checked = False
        for s in seeds:
            hseed, tseed = child_seeds(s, 2, 0)
            hasher = self.hasher_factory(p.dim, p.C * k, width, hseed)
            outcome = first_success(stream, target, hasher, X_test, y_test, epsilon, grid,
                                    keep=keep, seed=tseed, check_lshtable=not checked,
                                    floor_z=p.floor_z)
            if not checked and not math.isnan(outcome.lshtable_difference):
                checked = True
                if not outcome.lshtable_difference <= 1e-9:
                    raise RuntimeError(f"the bucket means disagree with LSHTable by "
                                       f"{outcome.lshtable_difference:g} at k={k}, "
                                       f"ε={epsilon:g}")
            setting.outcomes.append(outcome)
            if stop_censored and setting.censored - setting.floors >= len(seeds) - j + 1:
                break
        return setting

    def _statistic_arrays(self, setting: _Setting):
        p = self.params
        low = next_grid_value(p.grid_start, setting.cap, p.grid_ratio)
        n = np.where(np.isfinite(setting.n), setting.n, float(low))
        # the table at a floor's early stop bounds nothing: the table half uses the others
        buckets = np.array([o.n_buckets for o in setting.outcomes if not o.floor], np.float64)
        return n, (buckets if len(buckets) else np.array([np.nan]))

    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult:
        p = self.params
        p.validate()
        per_k, verdicts, skipped, probes = {}, {}, [], {}
        for k, eps_grid in p.epsilons:
            if p.stop_at_refutation and Verdict.REFUTED in verdicts.values():
                skipped.append(k)
                continue
            per_k[k] = self._measure_k(k, eps_grid, seed)
            verdicts[k] = per_k[k]["verdict"]
        verdict = combine_verdicts(verdicts.values())
        if not (p.stop_at_refutation and verdict == Verdict.REFUTED):
            for k, eps0 in p.probes:
                probes[k] = self._calibrate(k, (eps0,), self._problem(k, seed), seed)
        return self._result(seed, per_k, verdict, skipped, probes, out)

    def _calibrate(self, k: int, eps_grid, problem, seed: int) -> dict:
        """The calibration setting of k (its largest ε): an entry with ``calibration``
        (n*, constant Ĉ_n, table size) and, when censored, verdict OUT_OF_REACH and reason."""
        p = self.params
        eps0 = float(eps_grid[0])
        r0 = self.r(eps0)
        cal_seeds = child_seeds(seed, p.n_calibration, 11, k)
        cal = self.measure_setting(problem, k, eps0, p.calibration_cap, cal_seeds,
                                   child_seeds(seed, 1, 14, k)[0], stop_censored=True)
        complete = len(cal.outcomes) == p.n_calibration
        learned = np.array([o.n for o in cal.outcomes if not o.floor])
        cal_stat = (quantile_count(learned, p.probability) if complete and len(learned)
                    else math.inf)
        learned_buckets = [o.n_buckets for o in cal.outcomes if not o.floor]
        buckets = quantile_count(learned_buckets or [o.n_buckets for o in cal.outcomes],
                                 p.probability)
        entry = {"k": k, "epsilons": list(eps_grid), "n_hashes": p.C * k,
                 "calibration": {"epsilon": eps0, "r": r0, "draws": len(cal.outcomes),
                                 "censored": cal.censored, "floors": cal.floors,
                                 "cap": cal.cap, "n_star": cal_stat, "n_buckets": buckets,
                                 "forward_ops": lsh_forward_ops(p.dim, p.C * k, int(buckets)),
                                 "n_draws_values": cal.n}}
        if math.isfinite(cal_stat):
            entry["calibration"]["constant"] = cal_stat / (k * r0**k * math.log(r0))
            return entry
        if complete and not len(learned):  # every draw at a floor: the caps stay at the
            entry["calibration"]["constant"] = None  # calibration cap (floors cost nothing)
            return entry
        needed = _needed_by_extrapolation([o.tail for o in cal.outcomes
                                           if not math.isfinite(o.n)], p.n_test)
        needed = max(needed, float(cal.cap)) if not math.isnan(needed) else math.nan
        e_min = float(eps_grid[-1])
        scale = (k * self.r(e_min) ** k * math.log(self.r(e_min))) / (k * r0**k * math.log(r0))
        entry["calibration"].update({
            "violating_fraction_at_cap_median": float(np.median([o.violating
                                                                 for o in cal.outcomes])),
            "empty_fraction_at_cap_median": float(np.median([o.empty for o in cal.outcomes])),
            "n_needed_extrapolated": needed})
        entry["verdict"] = Verdict.OUT_OF_REACH
        entry["reason"] = (
            f"calibration at ε={eps0:g}: {cal.censored} of {len(cal.outcomes)} draws did not "
            f"reach ℓ∞ ≤ ε within {cal.cap} samples (about {needed:.3g} per draw needed, "
            f"extrapolated from the violating test points)"
            + (f"; by the claim's own scaling ε={e_min:g} would need about {needed * scale:.3g}"
               if e_min != eps0 else ""))
        return entry

    def _measure_k(self, k: int, eps_grid, seed: int) -> dict:
        p = self.params
        problem = self._problem(k, seed)
        entry = self._calibrate(k, eps_grid, problem, seed)
        if "verdict" in entry:
            return entry
        c_hat = entry["calibration"]["constant"]
        settings = []
        for i, eps in enumerate(eps_grid):
            cap = p.calibration_cap if c_hat is None else min(p.max_samples, max(
                p.grid_start, theorem_samples(p.cap_factor * c_hat, k, p.dim, p.lipschitz,
                                              float(eps))))
            seeds = child_seeds(seed, p.n_draws, 12, k, i)
            settings.append(self.measure_setting(problem, k, float(eps), cap, seeds,
                                                 child_seeds(seed, 1, 15, k, i)[0]))
        r = np.array([s.r for s in settings])
        arrays = [self._statistic_arrays(s) for s in settings]
        stat = OrderStatistic(p.probability)  # quantile_count, for all resamples at once
        boot_seed = child_seeds(seed, 2, 13, k)
        n_est = bootstrap_exponent(r, [a[0] for a in arrays], stat, n_boot=p.n_boot,
                                   seed=boot_seed[0], offset=np.log(r))
        t_est = bootstrap_exponent(r, [a[1] for a in arrays], stat, n_boot=p.n_boot,
                                   seed=boot_seed[1])
        censored = [s.censored for s in settings]
        n_verdict, n_info = decide_censored_exponent(n_est, censored, p.n_draws, k, p.margin,
                                                     p.probability)
        floor_decisions = [decide_probability(p.n_draws - st.floors, p.n_draws, p.probability)
                           for st in settings]
        floored = [i for i, d in enumerate(floor_decisions) if d.verdict == Verdict.REFUTED]
        t_verdict, t_info = decide_censored_exponent(
            t_est, [st.censored - st.floors for st in settings],
            [max(1, p.n_draws - st.floors) for st in settings], k, p.margin, p.probability)
        rows = []
        for s, (n_arr, b_arr) in zip(settings, arrays):
            n_star = stat(n_arr)
            buckets = stat(b_arr)
            ops = lsh_forward_ops(p.dim, p.C * k, int(buckets)) if np.isfinite(buckets) \
                else math.nan
            rows.append({
                "epsilon": s.epsilon, "r": s.r, "width": self.width_rule(k, s.epsilon),
                "cap": s.cap, "censored_draws": s.censored, "floors": s.floors,
                "n_star": n_star, "n_star_censored": s.censored >= p.n_draws - math.ceil(
                    p.probability * p.n_draws - 1e-9) + 1,
                "constant": n_star / (k * s.r**k * math.log(s.r)),
                "n_star_over_buckets": n_star / max(buckets, 1.0),
                "n_buckets": buckets, "n_buckets_over_r_k": buckets / s.r**k,
                "forward_ops": ops,
                "forward_ops_over_dk_log2_r": ops / (p.dim * k * math.log2(s.r)),
                "n_draws_values": s.n, "n_buckets_values": b_arr,
                "empty_fraction_at_stop_median": float(np.median([o.empty for o in s.outcomes])),
            })
        floor_verdict = Verdict.REFUTED if floored else Verdict.HOLDS
        entry.update({
            "settings": rows,
            "samples": {"estimate": n_est, "verdict": n_verdict, **n_info},
            "table_size": {"estimate": t_est, "verdict": t_verdict, **t_info},
            "floors": {"verdict": floor_verdict, "refuted_at_epsilon":
                       [settings[i].epsilon for i in floored],
                       "reachable_probability_upper": [d.ci_high for d in floor_decisions]},
            "verdict": combine_verdicts([n_verdict, t_verdict, floor_verdict]),
        })
        if entry["verdict"] == Verdict.OUT_OF_REACH:
            worst = [row for row in rows if row["n_star_censored"]] or rows[-1:]
            tails = [o.tail for s in settings for o in s.outcomes if not math.isfinite(o.n)]
            needed = _needed_by_extrapolation(tails, p.n_test)
            entry["reason"] = (f"n* at ε={worst[-1]['epsilon']:g} is beyond the cap "
                               f"{worst[-1]['cap']} (or too close to it to bootstrap); about "
                               f"{needed:.3g} samples per draw would be needed (extrapolated)")
        return entry

    # ------------------------------------------------------------------ report
    def _result(self, seed, per_k, verdict, skipped, probes, out) -> CheckResult:
        p = self.params
        decided = {k: e for k, e in per_k.items() if "samples" in e}
        parts, constants = [], []
        for k, e in per_k.items():
            if "samples" not in e:
                parts.append(f"k={k}: {e['verdict']} ({e['reason']})")
                continue
            n_est, t_est = e["samples"]["estimate"], e["table_size"]["estimate"]
            cs = [row["constant"] for row in e["settings"]]
            constants.append((k, min(cs), max(cs)))
            parts.append(f"k={k}: n* exponent {n_est.text()}, table {t_est.text()} "
                         f"(limit {k + p.margin:g}) -> {e['verdict']}")
        if decided:
            worst_k = max(decided, key=lambda k: decided[k]["samples"]["estimate"].exponent - k)
            w = decided[worst_k]["samples"]["estimate"]
            measured, interval = w.exponent - worst_k, (w.ci_low - worst_k, w.ci_high - worst_k)
        else:
            measured, interval = math.nan, None
        for k, e in probes.items():
            c = e["calibration"]
            if c.get("constant") is None and "verdict" not in e:
                parts.append(f"k={k} (probe, not decided): every draw at a floor at "
                             f"ε={c['epsilon']:g}")
            elif c.get("constant") is not None:
                constants.append((k, c["constant"], c["constant"]))
                parts.append(f"k={k} (probe, not decided): n* = {c['n_star']:.3g} at "
                             f"ε={c['epsilon']:g}, C_n {c['constant']:.3g}, "
                             f"{c['n_buckets']:.3g} buckets")
            else:
                parts.append(f"k={k} (probe, not decided): out of reach — {e['reason']}")
        constant_text = "; ".join(f"k={k}: C_n {lo:.3g}-{hi:.3g}" if hi > lo else
                                  f"k={k}: C_n {lo:.3g}" for k, lo, hi in constants)
        if constants and max(hi for _, _, hi in constants) > 10:
            constant_text += (" — the single-table learner needs a sample constant far above 1 "
                              "(test points in empty buckets of small mass dominate ℓ∞)")
        details = {
            "learner": ("one table: EuclideanLSH(d, m = C·k, width w) + LSHTable(hasher, "
                        "degree=0) (bucket means; empty bucket -> global mean of y)"),
            "constants": {"C": p.C, "width": repr(self.width_rule), "target": "ridge L·<u, x>",
                          "hasher": getattr(self.hasher_factory, "__name__",
                                            repr(self.hasher_factory)),
                          "keep_rule": repr(self.keep_rule)},
            "calibration": (f"{p.n_calibration} draws of their own at the largest ε of each k "
                            "give the constant Ĉ_n = n*/(k r^k ln r) of the draws not at a "
                            "floor; it sets only the sample caps "
                            f"({p.cap_factor:g}·Ĉ_n·k r^k ln r, ≤ {p.max_samples})"),
            "validation": (f"{p.n_draws} fresh draws at every ε of each k; the exponents are "
                           "fitted and decided on these alone"),
            "per_k": {str(k): e for k, e in per_k.items()},
            "skipped_k": skipped,
            "probes": {str(k): e for k, e in probes.items()},
            "sample_constants": constant_text,
            "notes": [
                "ℓ∞ error = max over n_test fixed fresh test points of the input set: buckets "
                "of mass ≲ 1/n_test are not probed (a fixed n_test keeps the scaling fair; "
                "it is not the sup over every point)",
                "n_i = first grid n at which a draw's ℓ∞ error is ≤ ε (nested prefixes of one "
                "stream); n* = the ⌈0.8·D⌉-th smallest n_i",
                "forward_ops = m(2d + 4) + ⌈log2 N⌉ (proofs_checks.op_counts) at the table "
                "size N of n*: reported against d·k·log2 r, not decided (it is a formula of N)",
            ],
        }
        if verdict != Verdict.HOLDS:
            details["diagnosis"] = self._diagnosis(per_k)
        plots = self._plot(per_k, out, f"{self.name}.png")
        text = "; ".join(parts)
        if constant_text:
            text += ". " + constant_text
        return self.result(
            seed=seed, measured=measured, bound=p.margin, measured_text=text,
            bound_text=(f"per k: exponent of n*/ln r (P = {p.probability:g}) and of the table "
                        f"size in r = L√d/ε ≤ k + {p.margin:g}"),
            verdict=verdict, details=details, plots=plots, measured_interval=interval)

    def _diagnosis(self, per_k) -> list[str]:
        p = self.params
        out = []
        for k, e in per_k.items():
            if e["verdict"] == Verdict.HOLDS:
                continue
            if "samples" not in e:
                c = e["calibration"]
                out.append(f"k={k}: {e['reason']}; at the cap the median draw had "
                           f"{c['n_buckets']:.0f} non-empty buckets and "
                           f"{c['empty_fraction_at_cap_median']:.1%} of the test points in "
                           f"empty buckets")
                continue
            for part in ("samples", "table_size"):
                d = e[part]
                est = d["estimate"]
                if d["verdict"] == Verdict.HOLDS:
                    continue
                msg = (f"k={k} {part}: exponent {est.text()} against the limit "
                       f"{d['limit']:g} ({d['verdict']}; P(censored resample) above / below "
                       f"the mean log r: {d['p_high']:.3g} / {d['p_low']:.3g})")
                if d["censored_settings"]:
                    msg += (f"; n* censored at ε = "
                            f"{[e['settings'][i]['epsilon'] for i in d['censored_settings']]}")
                out.append(msg)
            floors = e["floors"]
            if floors["verdict"] == Verdict.REFUTED:
                uppers = [round(v, 3) for v in floors["reachable_probability_upper"]]
                out.append(f"k={k}: at ε = {floors['refuted_at_epsilon']} too many draws are "
                           f"at an error floor (buckets too coarse for ε whatever n): the "
                           f"fraction that can reach ε is < {p.probability:g} (Clopper–Pearson "
                           f"upper ends {uppers})")
            if e.get("reason"):
                out.append(f"k={k}: {e['reason']}")
        return out

    def _plot(self, per_k, out, name):
        if out is None:
            return []
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for k, e in per_k.items():
            rows = e.get("settings")
            if not rows:
                continue
            r = [row["r"] for row in rows]
            y = [row["n_star"] / math.log(row["r"]) for row in rows]
            line = axes[0].plot(r, y, "o-", label=f"k={k}")[0]
            # the claim's slope k through the first point, for the eye
            axes[0].plot(r, [y[0] * (x / r[0]) ** k for x in r], "--", lw=1,
                         color=line.get_color())
            t = [row["n_buckets"] for row in rows]
            axes[1].plot(r, t, "o-", label=f"k={k}", color=line.get_color())
            axes[1].plot(r, [t[0] * (x / r[0]) ** k for x in r], "--", lw=1,
                         color=line.get_color())
        axes[0].set_ylabel("n* / ln r  (dashed: slope k)")
        axes[1].set_ylabel("non-empty buckets at n*")
        for ax in axes:
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("r = L√d/ε")
            ax.legend(fontsize=7)
        return save_figure(fig, out, name)
