"""The check framework: a claim becomes a measurement with a verdict.

A check draws the random objects a theorem quantifies over, measures the quantity, compares it
with the bound and returns a ``CheckResult``. Probabilistic claims ("with probability ≥ 0.9")
are decided over repeated independent draws by the exact (Clopper–Pearson) interval of the
success rate: *holds* when its lower end (95 %) is ≥ the claimed probability, *refuted* when
its upper end is below it, *inconclusive* otherwise — then ``draws_needed`` says how many more
draws would decide if the observed rate persisted.

Every check is a subclass of ``Check`` with a parameter dataclass (``Params``, with ``quick``
and ``full`` presets) registered by name with ``@register``.
"""

from __future__ import annotations

import abc
import enum
import math
import pathlib
import time
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import stats

from lipschitz.validation import check_int, check_real, check_seed

__all__ = [
    "Verdict", "ProbabilityDecision", "decide_probability", "decide_probability_bounds",
    "quantile_upper_bound", "draws_to_decide",
    "combine_verdicts", "CheckResult", "Check", "CheckParams", "register", "REGISTRY",
    "child_seeds", "to_jsonable", "CONFIDENCE",
]

#: Confidence level of every Clopper–Pearson decision.
CONFIDENCE = 0.95
#: Never propose more draws than this in ``draws_needed``.
MAX_DRAWS = 10**7


class Verdict(str, enum.Enum):
    """Outcome of a check: the claim holds, is refuted, or the data cannot decide."""

    HOLDS = "holds"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"

    def __str__(self) -> str:
        return self.value


def _cp_interval(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    ci = stats.binomtest(successes, trials).proportion_ci(confidence, method="exact")
    return float(ci.low), float(ci.high)


def _cp_beta(successes: np.ndarray, trials: np.ndarray, confidence: float):
    """Vectorised Clopper–Pearson bounds (the Beta quantiles binomtest uses)."""
    alpha = 1.0 - confidence
    k, n = successes.astype(float), trials.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k == 0, 0.0, stats.beta.ppf(alpha / 2, k, n - k + 1))
        high = np.where(k == n, 1.0, stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
    return low, high


def draws_to_decide(successes: int, trials: int, claimed: float,
                    confidence: float = CONFIDENCE, max_draws: int = MAX_DRAWS) -> int | None:
    """How many more draws would decide the claim if the observed success rate persisted.

    With rate r = successes / trials, the smallest N ≥ trials is searched such that
    round(r·N) successes out of N give a Clopper–Pearson interval that excludes ``claimed``
    (lower end ≥ claimed if r > claimed, upper end < claimed if r < claimed).

    Arguments:
        successes, trials: the observed counts, 0 ≤ successes ≤ trials, trials ≥ 1.
        claimed: the claimed probability, in (0, 1).
        confidence: the interval's coverage.
        max_draws: give up beyond this total.

    Returns:
        N − trials (0 when already decided), or ``None`` when no N ≤ ``max_draws`` decides
        (in particular when r equals ``claimed``).

    Raises:
        ValueError: counts out of range or ``claimed`` outside (0, 1).
    """
    trials = check_int(trials, "trials", low=1)
    successes = check_int(successes, "successes", low=0, high=trials)
    claimed = check_real(claimed, "claimed", 0.0, 1.0, low_open=True, high_open=True)
    rate = successes / trials

    def decided(n: np.ndarray) -> np.ndarray:
        k = np.clip(np.round(rate * n), 0, n)
        low, high = _cp_beta(k, n, confidence)
        return (low >= claimed) if rate > claimed else (high < claimed)

    if rate == claimed:
        return None
    if decided(np.array([trials]))[0]:
        return 0
    hi = trials
    while True:
        hi = min(2 * hi, max_draws)
        if decided(np.array([hi]))[0]:
            break
        if hi >= max_draws:
            return None
    lo = max(trials, hi // 2)
    # decided() is monotone up to rounding of r·N: scan the last bracket in vectorised steps
    while hi - lo > 4096:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decided(np.array([mid]))[0] else (mid, hi)
    grid = np.arange(lo, hi + 1)
    first = int(grid[np.argmax(decided(grid))])
    return first - trials


@dataclass(frozen=True)
class ProbabilityDecision:
    """The decision on a claim "the event has probability ≥ claimed" from repeated draws.

    Attributes:
        successes, trials: the counts.
        claimed: the claimed probability.
        rate: successes / trials.
        ci_low, ci_high: exact Clopper–Pearson interval (``confidence``) of the probability.
        verdict: holds (ci_low ≥ claimed), refuted (ci_high < claimed) or inconclusive.
        draws_needed: more draws that would decide at the observed rate (0 when decided,
            None when no feasible number would).
        confidence: the interval's coverage.
    """

    successes: int
    trials: int
    claimed: float
    rate: float
    ci_low: float
    ci_high: float
    verdict: Verdict
    draws_needed: int | None
    confidence: float = CONFIDENCE

    def text(self) -> str:
        """Short form for tables: 'P̂=38/40=0.95 [0.83, 0.99]'."""
        return (f"P̂={self.successes}/{self.trials}={self.rate:.3g} "
                f"[{self.ci_low:.3g}, {self.ci_high:.3g}]")


def decide_probability(successes: int, trials: int, claimed: float,
                       confidence: float = CONFIDENCE) -> ProbabilityDecision:
    """Decide "P(event) ≥ claimed" from ``successes`` out of ``trials`` independent draws.

    Uses ``scipy.stats.binomtest(successes, trials).proportion_ci(confidence, method="exact")``.

    Raises:
        ValueError: counts out of range, ``claimed`` or ``confidence`` outside (0, 1).
    """
    trials = check_int(trials, "trials", low=1)
    successes = check_int(successes, "successes", low=0, high=trials)
    claimed = check_real(claimed, "claimed", 0.0, 1.0, low_open=True, high_open=True)
    confidence = check_real(confidence, "confidence", 0.0, 1.0, low_open=True, high_open=True)
    low, high = _cp_interval(successes, trials, confidence)
    if low >= claimed:
        verdict = Verdict.HOLDS
    elif high < claimed:
        verdict = Verdict.REFUTED
    else:
        verdict = Verdict.INCONCLUSIVE
    needed = 0 if verdict != Verdict.INCONCLUSIVE else draws_to_decide(
        successes, trials, claimed, confidence)
    return ProbabilityDecision(successes, trials, claimed, successes / trials, low, high,
                               verdict, needed, confidence)


def decide_probability_bounds(certain: int, possible: int, trials: int, claimed: float,
                              confidence: float = CONFIDENCE) -> ProbabilityDecision:
    """Decide "P(event) ≥ claimed" when some draws could not be classified exactly.

    ``certain`` draws are known successes, ``possible`` ≥ ``certain`` could be successes (the
    others are known failures). Holds when even ``certain`` successes give a lower
    Clopper–Pearson end ≥ claimed; refuted when even ``possible`` successes give an upper end
    below it; inconclusive otherwise. With certain == possible this is ``decide_probability``.

    Returns:
        The ``ProbabilityDecision`` of ``certain`` successes with the combined verdict (and
        ``draws_needed`` from it when inconclusive).

    Raises:
        ValueError: counts out of range (0 ≤ certain ≤ possible ≤ trials).
    """
    trials = check_int(trials, "trials", low=1)
    possible = check_int(possible, "possible", low=0, high=trials)
    certain = check_int(certain, "certain", low=0, high=possible)
    low = decide_probability(certain, trials, claimed, confidence)
    if certain == possible or low.verdict == Verdict.HOLDS:
        return low
    high = decide_probability(possible, trials, claimed, confidence)
    verdict = Verdict.REFUTED if high.verdict == Verdict.REFUTED else Verdict.INCONCLUSIVE
    needed = 0 if verdict == Verdict.REFUTED else low.draws_needed
    return ProbabilityDecision(certain, trials, claimed, certain / trials, low.ci_low,
                               high.ci_high, verdict, needed, confidence)


def quantile_upper_bound(values, probability: float,
                         confidence: float = CONFIDENCE) -> float | None:
    """The smallest observed v with P(X ≤ v) ≥ ``probability`` certified at ``confidence``.

    Among n i.i.d. draws, v = the s-th smallest value for the least s whose Clopper–Pearson
    lower end (s successes out of n) is ≥ ``probability``; "X ≤ v" then holds with probability
    ≥ ``probability`` by the decision rule of ``decide_probability``.

    Arguments:
        values: 1-D array of n ≥ 1 draws (``inf`` allowed).
        probability: in (0, 1).

    Returns:
        v, or None when even n successes out of n would not certify ``probability``.

    Raises:
        ValueError: an empty or non-1-D array, NaN values, probability outside (0, 1).
    """
    v = np.sort(np.asarray(values, dtype=np.float64))
    if v.ndim != 1 or v.size == 0 or np.isnan(v).any():
        raise ValueError("values must be a non-empty 1-D array without NaN")
    check_real(probability, "probability", 0.0, 1.0, low_open=True, high_open=True)
    n = v.size
    low, _ = _cp_beta(np.arange(1, n + 1), np.full(n, n), confidence)
    ok = np.flatnonzero(low >= probability)
    return float(v[ok[0]]) if ok.size else None


def combine_verdicts(verdicts) -> Verdict:
    """Refuted if any part is refuted, holds if every part holds, inconclusive otherwise.

    Raises:
        ValueError: an empty list.
    """
    verdicts = [Verdict(v) for v in verdicts]
    if not verdicts:
        raise ValueError("verdicts must not be empty")
    if Verdict.REFUTED in verdicts:
        return Verdict.REFUTED
    if all(v == Verdict.HOLDS for v in verdicts):
        return Verdict.HOLDS
    return Verdict.INCONCLUSIVE


def child_seeds(seed: int, n: int, *salt: int) -> list[int]:
    """``n`` independent non-negative int seeds derived from ``seed`` and a ``salt`` path.

    Deterministic: the same (seed, salt) always gives the same list, and different salts give
    independent streams (``numpy.random.SeedSequence``).
    """
    seed = check_seed(seed)
    state = np.random.SeedSequence([seed, *[int(s) for s in salt]]).generate_state(max(n, 1))
    return [int(s) for s in state[:n]]


def to_jsonable(value: Any) -> Any:
    """Recursively turn numpy scalars/arrays, enums, dataclasses and paths into JSON types.

    Non-finite floats become the strings "nan", "inf" or "-inf" (JSON has no such numbers).
    """
    if isinstance(value, enum.Enum):
        return value.value
    if is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(asdict(value))
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        v = float(value)
        return v if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(value, pathlib.Path):
        return str(value)
    return value


@dataclass(frozen=True)
class CheckResult:
    """What a check measured and what it concludes.

    Attributes:
        name: the check's registry name.
        claim: the claim in words, with its source.
        source: the paper and statement (e.g. "Baykal et al. 2022, Lemma 4.2(1)").
        measured: the headline measured quantity (a number; units in ``measured_text``).
        bound: the bound it is compared with (a number).
        measured_text, bound_text: human-readable forms for the table.
        verdict: holds / refuted / inconclusive.
        details: raw measurements, fitted constants, per-part verdicts, caveats (JSON-able).
        params: the parameters the check ran with.
        seed: the seed it ran with (same seed, same numbers).
        plots: paths of the plots written (empty without an output folder).
        seconds: wall-clock time of ``run``.
        draws_needed: for an inconclusive probabilistic claim, how many more draws would
            decide at the observed rate (None when not applicable or not feasible).
    """

    name: str
    claim: str
    source: str
    measured: float
    bound: float
    measured_text: str
    bound_text: str
    verdict: Verdict
    details: dict[str, Any]
    params: dict[str, Any]
    seed: int
    plots: list[str] = field(default_factory=list)
    seconds: float = 0.0
    draws_needed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dictionary of every field."""
        return to_jsonable({f.name: getattr(self, f.name) for f in fields(self)})


class CheckParams:
    """Mixin for the parameter dataclass of a check: presets by name.

    Subclasses are frozen dataclasses whose defaults are the quick preset; ``full()`` returns
    the full preset (override it).
    """

    @classmethod
    def quick(cls):
        """The quick preset (the defaults): every check in ≤ minutes on 2 CPU cores."""
        return cls()

    @classmethod
    def full(cls):
        """The full preset: enough draws to decide every probabilistic claim."""
        return cls()

    @classmethod
    def preset(cls, name: str):
        """``quick()`` or ``full()`` by name.

        Raises:
            ValueError: an unknown preset name.
        """
        if name not in ("quick", "full"):
            raise ValueError(f"preset must be 'quick' or 'full', got {name!r}")
        return getattr(cls, name)()


class Check(abc.ABC):
    """A claim of a paper as an executable measurement.

    Subclasses set the class attributes ``name``, ``claim``, ``source`` and ``Params`` (a
    ``CheckParams`` dataclass) and implement ``_run(seed, out)`` returning a ``CheckResult``
    (``run`` adds the timing). ``__init__`` only stores the parameters.

    Arguments:
        params: an instance of ``Params`` (default: ``Params()``, the quick preset).

    Raises:
        ValueError: ``params`` of the wrong type.
    """

    name: ClassVar[str]
    claim: ClassVar[str]
    source: ClassVar[str]
    Params: ClassVar[type]

    def __init__(self, params=None):
        params = self.Params() if params is None else params
        if not isinstance(params, self.Params):
            raise ValueError(f"params must be a {self.Params.__name__}, got {type(params).__name__}")
        self.params = params

    @classmethod
    def preset(cls, name: str) -> "Check":
        """The check with the ``quick`` or ``full`` parameters."""
        return cls(cls.Params.preset(name))

    def run(self, seed: int = 0, out: str | pathlib.Path | None = None) -> CheckResult:
        """Run the check.

        Arguments:
            seed: non-negative integer; the same seed gives the same numbers.
            out: folder for plots (created if needed); None writes nothing.

        Returns:
            ``CheckResult`` (``seconds`` filled in).

        Raises:
            ValueError: a negative seed or invalid parameters.
        """
        seed = check_seed(seed)
        if out is not None:
            out = pathlib.Path(out)
            out.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        result = self._run(seed, out)
        seconds = time.perf_counter() - start
        return CheckResult(**{**{f.name: getattr(result, f.name) for f in fields(result)},
                              "seconds": round(seconds, 3)})

    @abc.abstractmethod
    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult: ...

    def result(self, *, seed: int, measured: float, bound: float, measured_text: str,
               bound_text: str, verdict: Verdict, details: dict, plots=(),
               draws_needed: int | None = None) -> CheckResult:
        """Build this check's ``CheckResult`` (name, claim, source and params filled in)."""
        return CheckResult(
            name=self.name, claim=self.claim, source=self.source, measured=float(measured),
            bound=float(bound), measured_text=measured_text, bound_text=bound_text,
            verdict=Verdict(verdict), details=to_jsonable(details),
            params=to_jsonable(asdict(self.params)), seed=seed,
            plots=[str(p) for p in plots], draws_needed=draws_needed,
        )


#: name -> Check subclass, filled by ``@register`` when the check modules are imported.
REGISTRY: dict[str, type[Check]] = {}


def register(cls: type[Check]) -> type[Check]:
    """Class decorator adding a check to ``REGISTRY`` under ``cls.name``.

    Raises:
        ValueError: a name registered twice by different classes, or missing attributes.
    """
    for attr in ("name", "claim", "source", "Params"):
        if not hasattr(cls, attr):
            raise ValueError(f"check class {cls.__name__} must define {attr!r}")
    if cls.name in REGISTRY and REGISTRY[cls.name] is not cls:
        raise ValueError(f"a check named {cls.name!r} is already registered")
    REGISTRY[cls.name] = cls
    return cls
