"""The check framework: a claim becomes a measurement with a verdict that could have failed.

A check draws the random objects a theorem quantifies over, measures the quantity, compares it
with the bound by a decision rule fixed in code, and returns a ``CheckResult``. Probabilistic
claims ("with probability ≥ 0.9") are decided over repeated independent draws by the exact
(Clopper–Pearson) interval of the success rate: *holds* when its lower end (95 %) is ≥ the
claimed probability, *refuted* when its upper end is below it, *inconclusive* otherwise — then
``draws_needed`` says how many more draws would decide if the observed rate persisted.

**Power.** Every check ships planted violations (``Check.planted_violations``): the same check
built around an object that breaks the claim by the smallest amount the claim rules out (a
hasher whose buckets grow as ε^0.5, an exponent off by one power, …). ``Check.run`` runs the
check's own decision (``Check.decide``) on ``n_power`` independent draws of each planted
violation; the *power* is the smallest fraction of them refuted, over the planted violations,
with its Clopper–Pearson interval. A check whose power is below ``POWER_WANTED`` (0.9) reports
*underpowered* whatever its data said — it could not have failed — and keeps the verdict of its
data as ``raw_verdict``. A claim true by algebra that holds (and whose planted non-identities
are refuted) reports *exact identity*.

**Pre-registration.** A check's deciding settings are its frozen ``Params`` dataclass (the
``quick`` and ``full`` presets are code), its class attribute ``rule`` (the decision rule in
words) and its planted violations; all three are written into the result (``preregistered``)
before anything is measured, so nothing in them can depend on the run that decides.

Every check is a subclass of ``Check`` registered by name with ``@register``. The protocol is
``../shared/VERDICTS.md``'s: holds / refuted / inconclusive / underpowered / out of reach /
exact identity.
"""

from __future__ import annotations

import abc
import enum
import math
import numbers
import pathlib
import time
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from typing import Any, Callable, ClassVar

import numpy as np
from scipy import stats

from routing.validation import check_bool, check_int, check_real, check_seed

__all__ = [
    "Verdict", "ProbabilityDecision", "decide_probability", "decide_probability_bounds",
    "quantile_upper_bound", "draws_to_decide",
    "combine_verdicts", "CheckResult", "Check", "CheckParams", "register", "REGISTRY",
    "child_seeds", "to_jsonable", "CONFIDENCE", "POWER_WANTED", "POWER_RUNS", "Planted",
    "PowerEstimate", "measure_power", "power_estimate", "final_verdict", "clopper_pearson",
]

#: Confidence level of every Clopper–Pearson decision.
CONFIDENCE = 0.95
#: Never propose more draws than this in ``draws_needed``.
MAX_DRAWS = 10**7
#: The power a check needs before its verdict may be *holds* (VERDICTS.md).
POWER_WANTED = 0.9
#: Planted runs per planted violation when a check's ``Params`` has no ``n_power`` field.
POWER_RUNS = 10


class Verdict(str, enum.Enum):
    """Outcome of a check (``../shared/VERDICTS.md``).

    * holds: the validation data agree with the claim by the pre-registered rule, and the
      power on the planted violations is ≥ 0.9;
    * refuted: the validation data contradict the claim by the rule (and power ≥ 0.9);
    * inconclusive: neither (``draws_needed`` or the details say what would decide);
    * underpowered: power < 0.9 — the procedure could not have told, whatever the data;
    * out of reach: the settings the claim needs exceed the preset (the details say what
      would be needed);
    * exact identity: a claim true by algebra, checked to rounding on random instances, with
      its planted non-identities refuted.
    """

    HOLDS = "holds"
    REFUTED = "refuted"
    INCONCLUSIVE = "inconclusive"
    UNDERPOWERED = "underpowered"
    OUT_OF_REACH = "out of reach"
    EXACT_IDENTITY = "exact identity"

    def __str__(self) -> str:
        return self.value


def _cp_interval(successes: int, trials: int, confidence: float) -> tuple[float, float]:
    ci = stats.binomtest(successes, trials).proportion_ci(confidence, method="exact")
    return float(ci.low), float(ci.high)


def clopper_pearson(successes: int, trials: int,
                    confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of a binomial proportion.

    Arguments:
        successes, trials: counts, 0 ≤ successes ≤ trials, trials ≥ 1.
        confidence: coverage, in (0, 1).

    Returns:
        (low, high), floats in [0, 1].

    Raises:
        ValueError: counts out of range or ``confidence`` outside (0, 1).
    """
    trials = check_int(trials, "trials", low=1)
    successes = check_int(successes, "successes", low=0, high=trials)
    confidence = check_real(confidence, "confidence", 0.0, 1.0, low_open=True, high_open=True)
    return _cp_interval(successes, trials, confidence)


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
    """The verdict of a claim made of parts that must all hold.

    Refuted if any part is refuted; holds if every part holds (exact identity if every part
    is one); out of reach if every part that does not hold is out of reach; underpowered if
    every part that does not hold is underpowered; inconclusive otherwise.

    Raises:
        ValueError: an empty list or an unknown verdict.
    """
    verdicts = [Verdict(v) for v in verdicts]
    if not verdicts:
        raise ValueError("verdicts must not be empty")
    if Verdict.REFUTED in verdicts:
        return Verdict.REFUTED
    if all(v == Verdict.EXACT_IDENTITY for v in verdicts):
        return Verdict.EXACT_IDENTITY
    if all(v in (Verdict.HOLDS, Verdict.EXACT_IDENTITY) for v in verdicts):
        return Verdict.HOLDS
    rest = {v for v in verdicts if v not in (Verdict.HOLDS, Verdict.EXACT_IDENTITY)}
    if rest == {Verdict.OUT_OF_REACH}:
        return Verdict.OUT_OF_REACH
    if rest == {Verdict.UNDERPOWERED}:
        return Verdict.UNDERPOWERED
    return Verdict.INCONCLUSIVE


@dataclass(frozen=True)
class Planted:
    """A planted violation: the check rebuilt around an object that breaks its claim.

    Attributes:
        name: short identifier (e.g. "diameter_eps^0.5").
        description: what is planted and by how much it breaks the claim, in words (e.g.
            "hasher whose bucket diameter grows as ε^0.5 instead of ε").
        build: () -> a ``Check`` of the same claim, same ``Params``, with the planted object
            in place (through real objects — a hasher, a family, a model — never by patching
            the comparison). Its ``decide(seed)`` must come out *refuted* for the check to
            have power.
    """

    name: str
    description: str
    build: Callable[[], "Check"]


@dataclass(frozen=True)
class PowerEstimate:
    """How often the check's own decision refutes one planted violation.

    Attributes:
        planted: the ``Planted.name``. description: its ``description``.
        refuted, runs: refuted decisions out of independent planted runs (fresh seeds).
        power: refuted / runs.
        ci_low, ci_high: Clopper–Pearson interval (95 %) of the power.
        verdicts: the raw verdict of each run.
    """

    planted: str
    description: str
    refuted: int
    runs: int
    power: float
    ci_low: float
    ci_high: float
    verdicts: tuple[str, ...]


def measure_power(planted: Planted, seeds) -> PowerEstimate:
    """Run ``planted.build().decide(s)`` for every seed and count the refutations.

    Arguments:
        planted: the planted violation.
        seeds: non-empty iterable of non-negative int seeds (independent of the real run's).

    Returns:
        ``PowerEstimate``.

    Raises:
        ValueError: no seeds, ``seeds`` not an iterable of seeds; whatever the planted check
            raises.
    """
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise ValueError(f"seeds must be an iterable of integer seeds >= 0, got {seeds!r}")
    seeds = [check_seed(s, f"seeds[{i}]") for i, s in enumerate(seeds)]
    if not seeds:
        raise ValueError("seeds must not be empty")
    check = planted.build()
    return power_estimate(planted, [check.decide(s).verdict for s in seeds])


def power_estimate(planted: Planted, verdicts) -> PowerEstimate:
    """The ``PowerEstimate`` of one planted violation from the raw verdicts of its runs (in
    seed order): how ``measure_power`` counts them, and how ``Check.with_power`` counts runs
    made apart (one task each, ``sparselab reproduce --workers``).

    Arguments:
        planted: the planted violation.
        verdicts: non-empty sequence of ``Verdict`` (or their values), one per planted run.

    Returns:
        ``PowerEstimate``.

    Raises:
        ValueError: no verdicts, or a value that is not a verdict.
    """
    verdicts = tuple(Verdict(v).value for v in verdicts)
    if not verdicts:
        raise ValueError("verdicts must not be empty")
    refuted = sum(v == Verdict.REFUTED.value for v in verdicts)
    low, high = _cp_interval(refuted, len(verdicts), CONFIDENCE)
    return PowerEstimate(planted.name, planted.description, refuted, len(verdicts),
                         refuted / len(verdicts), low, high, verdicts)


def final_verdict(raw: Verdict, power: float | None, identity: bool = False) -> Verdict:
    """The verdict a check prints from the verdict of its data and its measured power.

    * ``power`` None (not measured) or < ``POWER_WANTED``: *underpowered* — unless the data
      were *out of reach*, which stays (nothing was measured that power could qualify);
    * otherwise the raw verdict, with *holds* printed as *exact identity* for an ``identity``
      claim (true by algebra).

    Raises:
        ValueError: an unknown verdict, a power outside [0, 1], ``identity`` not a bool.
    """
    try:
        raw = Verdict(raw)
    except ValueError:
        raise ValueError(f"raw must be a Verdict (or its value), got {raw!r}") from None
    identity = check_bool(identity, "identity")
    if power is not None:
        power = check_real(power, "power", 0.0, 1.0)
    if raw == Verdict.OUT_OF_REACH:
        return raw
    if power is None:
        return Verdict.UNDERPOWERED
    if power < POWER_WANTED:
        return Verdict.UNDERPOWERED
    if identity and raw in (Verdict.HOLDS, Verdict.EXACT_IDENTITY):
        return Verdict.EXACT_IDENTITY
    return raw


def child_seeds(seed: int, n: int, *salt: int) -> list[int]:
    """``n`` independent non-negative int seeds derived from ``seed`` and a ``salt`` path.

    Deterministic: the same (seed, salt) always gives the same list, and different salts give
    independent streams (``numpy.random.SeedSequence``).

    Raises:
        ValueError: a seed or salt that is not an integer in [0, 2**63 - 1] (a bool or 2.5
            would be read as 1 or 2: another stream than the one asked for), or n < 0.
    """
    seed = check_seed(seed)
    n = check_int(n, "n", low=0)
    salt = [check_seed(s, f"salt[{i}]") for i, s in enumerate(salt)]
    state = np.random.SeedSequence([seed, *salt]).generate_state(max(n, 1))
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
        measured_interval: (low, high) interval of ``measured`` (its kind in
            ``measured_text`` or the details), or None for an exact quantity.
        raw_verdict: what the data said by the rule, before power was considered.
        power: the smallest power over the planted violations (None: not measured).
        power_interval: its Clopper–Pearson interval (95 %).
        power_details: one ``PowerEstimate`` (as a dict) per planted violation.
        preregistered: the deciding settings fixed in code before the run: ``params``,
            ``rule``, ``planted`` (name → description), ``n_power``, ``power_wanted``.
        settings: the pre-registered settings in one line.
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
    measured_interval: tuple[float, float] | None = None
    raw_verdict: Verdict | None = None
    power: float | None = None
    power_interval: tuple[float, float] | None = None
    power_details: list[dict[str, Any]] = field(default_factory=list)
    preregistered: dict[str, Any] = field(default_factory=dict)
    settings: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dictionary of every field."""
        return to_jsonable({f.name: getattr(self, f.name) for f in fields(self)})


class CheckParams:
    """Mixin for the parameter dataclass of a check: presets by name, settings in one line.

    Subclasses are frozen dataclasses whose defaults are the quick preset; ``full()`` returns
    the full preset (override it). A field ``n_power`` sets the planted runs per planted
    violation (default ``POWER_RUNS``).
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

    def summary(self) -> str:
        """The settings in one line: ``field=value`` for every field, floats to 4 digits."""
        def fmt(v):
            if isinstance(v, float):
                return f"{v:.4g}"
            if isinstance(v, (tuple, list)):
                return "(" + ",".join(fmt(x) for x in v) + ")"
            return str(v)
        return "; ".join(f"{f.name}={fmt(getattr(self, f.name))}" for f in fields(self))


def _check_param_types(params) -> None:
    """Check each field of a ``CheckParams`` dataclass annotated ``int``, ``float`` or
    ``bool`` holds one (a bool is no int, an int is a float), so that ``trials=True`` or
    ``trials=2.5`` is refused at the boundary, naming the field, instead of deep inside.

    Raises:
        ValueError: naming ``params.<field>`` and its value.
    """
    for f in fields(params):
        kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        value = getattr(params, f.name)
        if kind == "int":
            check_int(value, f"params.{f.name}")
        elif kind == "bool":
            check_bool(value, f"params.{f.name}")
        elif kind == "float" and (isinstance(value, bool)
                                  or not isinstance(value, numbers.Real)
                                  or math.isnan(value)):
            raise ValueError(f"params.{f.name} must be a real number, got {value!r}")


class Check(abc.ABC):
    """A claim of a paper as an executable measurement with a verdict that could have failed.

    Subclasses set the class attributes ``name``, ``claim``, ``source``, ``Params`` (a
    ``CheckParams`` dataclass) and ``rule`` (the decision rule in words), implement
    ``_run(seed, out)`` returning a ``CheckResult`` with the verdict of the data, and
    ``planted_violations()`` returning the planted violations its power is measured on.
    ``identity = True`` marks a claim true by algebra (its holding verdict prints as *exact
    identity*). ``__init__`` only stores the parameters.

    Arguments:
        params: an instance of ``Params`` (default: ``Params()``, the quick preset).

    Raises:
        ValueError: ``params`` of the wrong type, or a field annotated int, float or bool
            holding another type (naming it).
    """

    name: ClassVar[str]
    claim: ClassVar[str]
    source: ClassVar[str]
    Params: ClassVar[type]
    rule: ClassVar[str] = ""
    identity: ClassVar[bool] = False

    def __init__(self, params=None):
        params = self.Params() if params is None else params
        if not isinstance(params, self.Params):
            raise ValueError(f"params must be a {self.Params.__name__}, got {type(params).__name__}")
        _check_param_types(params)
        self.params = params

    @classmethod
    def preset(cls, name: str) -> "Check":
        """The check with the ``quick`` or ``full`` parameters."""
        return cls(cls.Params.preset(name))

    def planted_violations(self) -> list[Planted]:
        """The planted violations the power is measured on (override; default none, so a
        check that ships none reports *underpowered*)."""
        return []

    @property
    def n_power(self) -> int:
        """Planted runs per planted violation: ``params.n_power`` or ``POWER_RUNS``."""
        return int(getattr(self.params, "n_power", POWER_RUNS))

    def preregistration(self) -> dict[str, Any]:
        """The deciding settings, fixed in code before any run: params, rule, planted
        violations (name → description), planted runs and the power wanted."""
        return to_jsonable({
            "params": asdict(self.params), "rule": self.rule,
            "planted": {p.name: p.description for p in self.planted_violations()},
            "n_power": self.n_power, "power_wanted": POWER_WANTED,
            "confidence": CONFIDENCE,
        })

    def decide(self, seed: int = 0) -> CheckResult:
        """The check's measurement and decision alone (no power, no plots): ``verdict`` is
        what the data say by the rule. Power is measured by calling this on planted checks.

        Raises:
            ValueError: a negative seed or invalid parameters.
        """
        return self._run(check_seed(seed), None)

    def run(self, seed: int = 0, out: str | pathlib.Path | None = None,
            power: bool = True) -> CheckResult:
        """Run the check and measure its power on the planted violations.

        Arguments:
            seed: non-negative integer; the same seed gives the same numbers. The planted
                runs use seeds derived from it (``child_seeds(seed, n_power, 7919, i)``),
                disjoint from the real run's.
            out: folder for plots (created if needed); None writes nothing.
            power: measure the power (False: the verdict is *underpowered* unless out of
                reach; for quick looks at the data, whose verdict stays in ``raw_verdict``).

        Returns:
            ``CheckResult`` with ``verdict`` (``final_verdict`` of the raw verdict and the
            power), ``raw_verdict``, ``power``, ``power_interval``, ``power_details``,
            ``preregistered``, ``settings`` and ``seconds`` filled in.

        Raises:
            ValueError: a negative seed, ``power`` not a bool, or invalid parameters.
        """
        seed = check_seed(seed)
        power = check_bool(power, "power")  # never read by truthiness: 'False' is refused
        preregistered = self.preregistration()
        if out is not None:
            out = pathlib.Path(out)
            out.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        result = self._run(seed, out)
        estimates = []
        if power:
            planted = self.planted_violations()
            for i, p in enumerate(planted):
                estimates.append(measure_power(p, child_seeds(seed, self.n_power, 7919, i)))
        return self._with_estimates(result, estimates, preregistered,
                                    time.perf_counter() - start)

    def power_runs(self, seed: int = 0) -> list[tuple[int, int]]:
        """The planted runs ``run(seed)`` makes, as (index into ``planted_violations()``, seed
        of the run): ``n_power`` per planted violation, seeds
        ``child_seeds(seed, n_power, 7919, index)``. ``sparselab reproduce --workers`` makes
        each one a task (``planted_run``) and assembles them with ``with_power``.

        Raises:
            ValueError: a negative or non-integer seed.
        """
        seed = check_seed(seed)
        return [(i, s) for i in range(len(self.planted_violations()))
                for s in child_seeds(seed, self.n_power, 7919, i)]

    def planted_run(self, index: int, seed: int) -> Verdict:
        """The raw verdict of one planted run: ``planted_violations()[index]`` built and
        decided at ``seed``, as ``measure_power`` runs it.

        Raises:
            ValueError: ``index`` outside [0, number of planted violations), a bad seed.
        """
        planted = self.planted_violations()
        index = check_int(index, "index", 0, len(planted) - 1)
        return planted[index].build().decide(check_seed(seed)).verdict

    def with_power(self, result: CheckResult, verdicts: dict[int, list],
                   seconds: float) -> CheckResult:
        """``result`` (the real run's, made apart: ``decide(seed)``, or ``run(seed, out,
        power=False)`` for its plots) completed as ``run(seed)`` completes it, from planted
        runs made apart (``planted_run``): the same verdict, power, interval and details as
        ``run`` gives, ``seconds`` excepted.

        Arguments:
            result: the real run's ``CheckResult``.
            verdicts: index into ``planted_violations()`` -> the raw verdicts of its runs, in
                the order of ``power_runs``: every planted violation, or none (power not
                measured).
            seconds: the seconds to report (the real and the planted runs' times summed when
                they ran apart), >= 0.

        Raises:
            ValueError: verdicts of some planted violations but not all, a run count other
                than ``n_power``, a negative ``seconds``.
        """
        planted = self.planted_violations()
        seconds = check_real(seconds, "seconds", low=0.0)
        if verdicts and sorted(verdicts) != list(range(len(planted))):
            raise ValueError(f"verdicts must hold the runs of every planted violation "
                             f"(indices 0..{len(planted) - 1}), got indices {sorted(verdicts)}")
        counts = {i: len(v) for i, v in verdicts.items()}
        if any(n != self.n_power for n in counts.values()):
            raise ValueError(f"verdicts must hold n_power = {self.n_power} runs per planted "
                             f"violation, got {counts}")
        estimates = ([power_estimate(p, verdicts[i]) for i, p in enumerate(planted)]
                     if verdicts else [])
        return self._with_estimates(result, estimates, self.preregistration(), seconds)

    def _with_estimates(self, result, estimates, preregistered, seconds) -> CheckResult:
        """``result`` with its final verdict from its raw verdict and the planted runs'
        ``PowerEstimate``s (``run`` and ``with_power``)."""
        raw = result.raw_verdict if result.raw_verdict is not None else result.verdict
        worst = min(estimates, key=lambda e: (e.power, e.ci_low), default=None)
        verdict = final_verdict(raw, None if worst is None else worst.power,
                                identity=self.identity)
        return replace(
            result, verdict=verdict, raw_verdict=raw,
            power=None if worst is None else worst.power,
            power_interval=None if worst is None else (worst.ci_low, worst.ci_high),
            power_details=[to_jsonable(e) for e in estimates], preregistered=preregistered,
            settings=self.params.summary() if hasattr(self.params, "summary") else "",
            seconds=round(seconds, 3))

    @abc.abstractmethod
    def _run(self, seed: int, out: pathlib.Path | None) -> CheckResult: ...

    def result(self, *, seed: int, measured: float, bound: float, measured_text: str,
               bound_text: str, verdict: Verdict, details: dict, plots=(),
               draws_needed: int | None = None,
               measured_interval: tuple[float, float] | None = None) -> CheckResult:
        """Build this check's ``CheckResult`` (name, claim, source and params filled in);
        ``verdict`` is the verdict of the data by the rule."""
        return CheckResult(
            name=self.name, claim=self.claim, source=self.source, measured=float(measured),
            bound=float(bound), measured_text=measured_text, bound_text=bound_text,
            verdict=Verdict(verdict), details=to_jsonable(details),
            params=to_jsonable(asdict(self.params)), seed=seed,
            plots=[str(p) for p in plots], draws_needed=draws_needed,
            measured_interval=None if measured_interval is None else
            (float(measured_interval[0]), float(measured_interval[1])),
            raw_verdict=Verdict(verdict),
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
    old = REGISTRY.get(cls.name)
    # the same class loaded again (a user's module file imported twice) replaces itself
    if old is not None and old is not cls and (old.__module__, old.__qualname__) != (
            cls.__module__, cls.__qualname__):
        raise ValueError(f"a check named {cls.name!r} is already registered")
    REGISTRY[cls.name] = cls
    return cls
