"""The check framework: a claim becomes a measurement with a verdict that could have failed.

A check draws the random objects a theorem quantifies over, measures the quantity, compares it
with the bound by a decision rule fixed in code, and returns a ``CheckResult``. Probabilistic
claims ("with probability ≥ 0.9") are decided over repeated independent draws by the exact
(Clopper–Pearson) interval of the success rate: *holds* when its lower end (95 %) is ≥ the
claimed probability, *refuted* when its upper end is below it, *inconclusive* otherwise — then
``draws_needed`` says how many more draws would decide if the observed rate persisted.

**What *holds* means.** Every violation at least as large as the pre-registered *smallest
violation of interest* (SVI) would have been refuted with power ≥ 0.8, established at 95 %
confidence. Each decisive part of a check declares its SVI in code (``SVI``: the part, the
size in the claim's own units, a one-line reason; ``Check.smallest_violations``) and ships
planted violations (``Check.planted_violations``): the check rebuilt around a real object that
breaks that part's claim *at* the SVI (``Planted(part=..., size=svi)``), plus plants at other
sizes for a short power curve. ``Check.run`` runs the check's own decision (``Check.decide``)
on independent draws of every plant and counts a run as refuted when *the plant's part* is
refuted (a plant another part also catches does not measure this part's power). The power of
a part counts only through its one-sided 95 % Clopper–Pearson lower bound, wanted ≥
``POWER_WANTED`` = 0.8 (14 of 14 runs: 0.807); the *minimal detectable violation* (MDV) is the
smallest planted size whose bound reaches 0.8 (``part_powers``). A part whose MDV is missing or
above its SVI makes the check *underpowered* (with what would be needed), whatever its data
said; the verdict of the data stays in ``raw_verdict``. A check without declared SVIs gates on
every plant's lower bound and says that no SVI was declared. A claim true by algebra that holds
(and whose planted non-identities are refuted) reports *exact identity*.

**Multiplicity and seeds.** A check whose verdict combines parts decided with p-values controls
the family-wise error of a false refutation across them (``holm_parts``: Holm 1979). The
decisive run is repeated on ``SEED_RUNS`` seeds (quick; ``SEED_RUNS_FULL`` at full) and decided
by ``SEED_RULE`` (``seed_rule``); the per-seed verdicts are part of the result. Choices made
after seeing data are the class attribute ``post_hoc``, printed with the result.

**Pre-registration.** A check's deciding settings are its frozen ``Params`` dataclass (the
``quick`` and ``full`` presets are code), its class attribute ``rule`` (the decision rule in
words) and its planted violations; all three are written into the result (``preregistered``)
before anything is measured, so nothing in them can depend on the run that decides.

Every check is a subclass of ``Check`` registered by name with ``@register``. The protocol is
``docs/checks.md``'s: holds / refuted / inconclusive / underpowered / out of reach /
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

from inference.intervals import clopper_pearson as _inference_cp
from inference.intervals import power_lower_bound
from inference.multiplicity import holm
from routing.validation import check_bool, check_int, check_real, check_seed

__all__ = [
    "Verdict", "subset_or_none", "ProbabilityDecision", "decide_probability", "decide_probability_bounds",
    "quantile_upper_bound", "draws_to_decide",
    "combine_verdicts", "CheckResult", "Check", "CheckParams", "register", "REGISTRY",
    "child_seeds", "to_jsonable", "CONFIDENCE", "POWER_WANTED", "POWER_RUNS", "Planted",
    "PowerEstimate", "measure_power", "power_estimate", "final_verdict", "clopper_pearson",
    "SVI", "PartPower", "part_powers", "seed_rule", "holm_parts", "power_lower_bound",
    "POWER_CONFIDENCE", "SEED_RUNS", "SEED_RUNS_FULL",
]

#: Confidence level of every Clopper–Pearson decision.
CONFIDENCE = 0.95
#: Never propose more draws than this in ``draws_needed``.
MAX_DRAWS = 10**7
#: The power a check needs before its verdict may be *holds* (docs/checks.md): the one-sided
#: Clopper–Pearson lower bound (at ``POWER_CONFIDENCE``) of the fraction of planted runs refuted
#: must reach it — 14 of 14 runs give 0.807, 13 of 13 only 0.794.
POWER_WANTED = 0.8
#: One-sided confidence of the power's lower bound.
POWER_CONFIDENCE = 0.95
#: Planted runs per planted violation when a check's ``Params`` has no ``n_power`` field: the
#: fewest whose all-refuted count reaches ``POWER_WANTED`` (14 of 14: 0.807).
POWER_RUNS = 14
#: Seeds of the decisive run at the quick preset (``Check.run``), and at the full one.
SEED_RUNS = 3
SEED_RUNS_FULL = 5
#: The tiny preset (``Check.preset("tiny")``): a smoke run of the same machinery in seconds —
#: one seed, at most ``TINY_POWER_RUNS`` planted runs per plant, the check's ``Params.tiny()``
#: grid. Its power cannot reach ``POWER_WANTED`` (2 of 2 runs give a lower bound of 0.224), so
#: it decides nothing: every verdict but *out of reach* reads *underpowered*, labelled
#: ``TINY_NOTE``.
SEED_RUNS_TINY = 1
TINY_POWER_RUNS = 2
TINY_NOTE = "tiny: smoke run, decides nothing"


class Verdict(str, enum.Enum):
    """Outcome of a check (``docs/checks.md``).

    * holds: the validation data agree with the claim by the pre-registered rule (over its
      seeds, after family-wise control), and every decisive part's MDV is ≤ its SVI (power
      at the SVI with a one-sided 95 % lower bound ≥ 0.8);
    * refuted: the validation data contradict the claim by the rule (with that power);
    * inconclusive: neither (``draws_needed`` or the details say what would decide);
    * underpowered: an MDV above its SVI (or power not established at 95 %) — the
      procedure could not have told, whatever the data;
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
    return _inference_cp(successes, trials, confidence)


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
    """Vectorised Clopper–Pearson bounds (``inference.clopper_pearson`` on arrays)."""
    return _inference_cp(np.asarray(successes), np.asarray(trials), confidence)


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

    Uses ``inference.clopper_pearson`` (the numbers of ``scipy.stats.binomtest(successes,
    trials).proportion_ci(confidence, method="exact")``).

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
class SVI:
    """The smallest violation of interest of one decisive part of a check, fixed in code
    before the run (``docs/checks.md``).

    Attributes:
        part: the part's name (a key of the result's ``details["parts"]``, or the prefix of a
            group of them, e.g. "sparse_lookup"; "all" for the combined verdict).
        size: the violation's size in the claim's own units (e.g. 0.25 for "an exponent off
            by +0.25"), > 0.
        units: what ``size`` measures, in words (e.g. "exponent β of a lookup growing as N^β
            instead of log N").
        reason: one line: why violations smaller than this do not matter or cannot be told.

    Raises:
        ValueError: an empty part, units or reason, a size that is not a finite real > 0.
    """

    part: str
    size: float
    units: str
    reason: str

    def __post_init__(self):
        for name in ("part", "units", "reason"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name).strip():
                raise ValueError(f"SVI.{name} must be a non-empty string")
        check_real(self.size, "SVI.size", 0.0, None, low_open=True)
        if not math.isfinite(self.size):
            raise ValueError(f"SVI.size must be finite, got {self.size!r}")

    def text(self) -> str:
        """'sparse_lookup: 0.25 (exponent β …) — reason'."""
        return f"{self.part}: {self.size:.3g} ({self.units}) — {self.reason}"


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
        part: the decisive part whose power this plant measures (an ``SVI.part``): a run
            counts as refuted when *that part* is refuted (``Check.part_verdict``), not when
            another part catches the plant. None: the combined verdict (a legacy plant, not
            tied to an SVI).
        size: the planted violation's size in the SVI's units (None with ``part`` None).
            A plant at its part's SVI gates the verdict; plants at other sizes make the
            power curve the MDV is read from.
        runs: planted runs of this plant (None: the check's ``n_power``); curve points away
            from the SVI may use fewer.

    Raises:
        ValueError: a size without a part, a size that is not a real > 0, runs < 1.
    """

    name: str
    description: str
    build: Callable[[], "Check"]
    part: str | None = None
    size: float | None = None
    runs: int | None = None

    def __post_init__(self):
        if self.size is not None:
            if self.part is None:
                raise ValueError("Planted.size needs Planted.part (the part it measures)")
            check_real(self.size, "Planted.size", 0.0, None, low_open=True)
        if self.runs is not None:
            check_int(self.runs, "Planted.runs", low=1)


@dataclass(frozen=True)
class PowerEstimate:
    """How often the check's own decision refutes one planted violation.

    Attributes:
        planted: the ``Planted.name``. description: its ``description``.
        refuted, runs: refuted decisions out of independent planted runs (fresh seeds).
        power: refuted / runs.
        ci_low, ci_high: two-sided Clopper–Pearson interval (95 %) of the power.
        verdicts: the raw verdict of each run (of the plant's part when it has one).
        part, size: the plant's ``part`` and ``size`` (None for a legacy plant).
        lower: one-sided 95 % Clopper–Pearson lower bound of the power
            (``inference.power_lower_bound``): the number the gate compares with 0.8.
    """

    planted: str
    description: str
    refuted: int
    runs: int
    power: float
    ci_low: float
    ci_high: float
    verdicts: tuple[str, ...]
    part: str | None = None
    size: float | None = None
    lower: float = 0.0


def measure_power(planted: Planted, seeds, check: "Check | None" = None) -> PowerEstimate:
    """Run ``planted.build().decide(s)`` for every seed and count the refutations (of
    ``planted.part`` when it names one: ``Check.part_verdict``).

    Arguments:
        planted: the planted violation.
        seeds: non-empty iterable of non-negative int seeds (independent of the real run's).
        check: unused (kept for callers that pass the check the plant belongs to).

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
    built = planted.build()
    return power_estimate(planted, [built.part_verdict(built.decide(s), planted.part)
                                    for s in seeds])


def power_estimate(planted: Planted, verdicts) -> PowerEstimate:
    """The ``PowerEstimate`` of one planted violation from the raw verdicts of its runs (in
    seed order): how ``measure_power`` counts them, and how ``Check.with_power`` counts runs
    made apart (one task each, ``sparselab reproduce --workers``).

    Arguments:
        planted: the planted violation.
        verdicts: non-empty sequence of ``Verdict`` (or their values), one per planted run.

    Returns:
        ``PowerEstimate`` with its two-sided interval and one-sided lower bound.

    Raises:
        ValueError: no verdicts, or a value that is not a verdict.
    """
    verdicts = tuple(Verdict(v).value for v in verdicts)
    if not verdicts:
        raise ValueError("verdicts must not be empty")
    refuted = sum(v == Verdict.REFUTED.value for v in verdicts)
    low, high = _cp_interval(refuted, len(verdicts), CONFIDENCE)
    lower = float(power_lower_bound(refuted, len(verdicts), POWER_CONFIDENCE))
    return PowerEstimate(planted.name, planted.description, refuted, len(verdicts),
                         refuted / len(verdicts), low, high, verdicts, planted.part,
                         planted.size, lower)


@dataclass(frozen=True)
class PartPower:
    """The power of one decisive part: its SVI, its gate at the SVI and its MDV.

    Attributes:
        part: the part (``SVI.part``). svi: its ``SVI`` (as a dict).
        gate: the ``PowerEstimate`` (as a dict) of the plant at the SVI, or None when no
            plant sits at it.
        power_lower: that plant's one-sided 95 % lower bound (0 without one).
        mdv: the minimal detectable violation: the smallest planted size on the part's power
            curve whose lower bound is ≥ ``POWER_WANTED``; None when no size reaches it
            (curve points with fewer runs than ``POWER_RUNS`` cannot: 13 of 13 give 0.794).
        curve: [(size, refuted, runs, lower)] of the part's plants, by size.
        underpowered: mdv is None or > the SVI.
        needs: when underpowered, what would be needed, in words.
    """

    part: str
    svi: dict
    gate: dict | None
    power_lower: float
    mdv: float | None
    curve: list
    underpowered: bool
    needs: str = ""

    def text(self) -> str:
        """'sparse_lookup: SVI 0.25, MDV 0.25, power 14/14 ≥ 0.807'."""
        gate = ("no plant at the SVI" if self.gate is None else
                f"power at SVI {self.gate['refuted']}/{self.gate['runs']}, one-sided 95% lower "
                f"bound {self.power_lower:.3f} (wanted ≥ {POWER_WANTED:g})")
        mdv = "none on the curve" if self.mdv is None else f"{self.mdv:.3g}"
        curve = ", ".join(f"{s:.3g}: {r}/{n}" for s, r, n, _ in self.curve)
        text = f"{self.part}: SVI {self.svi['size']:.3g}, MDV {mdv}; {gate}; curve {curve}"
        if self.underpowered:
            text += f" — underpowered: {self.needs}"
        return text


def part_powers(svis, estimates) -> list[PartPower]:
    """Each SVI's gate and MDV from the planted runs of its part.

    The gate of a part is its plant at the SVI (``Planted.size == SVI.size``; of several, the
    worst): power counts only through its one-sided 95 % Clopper–Pearson lower bound, wanted
    ≥ ``POWER_WANTED``.
    The MDV is the smallest size of the part's power curve (its plants at every size) whose
    lower bound reaches ``POWER_WANTED``. A part is *underpowered* when
    the MDV is missing or above the SVI; ``needs`` then says how many more planted runs would
    establish the power at the SVI if its refuted fraction persisted
    (``draws_to_decide`` at the one-sided level), or that these settings cannot (the refuted
    fraction itself is below the wanted power).

    Arguments:
        svis: ``SVI`` objects (one per decisive part).
        estimates: ``PowerEstimate`` objects (those with ``part`` None are ignored).

    Returns:
        One ``PartPower`` per SVI, in order.
    """
    out = []
    for svi in svis:
        mine = [e for e in estimates if e.part == svi.part and e.size is not None]
        sizes = sorted({float(e.size) for e in mine})
        # several plants of one size (e.g. one per family): the worst of them counts
        worst = {size: min((e for e in mine if math.isclose(e.size, size, rel_tol=1e-9)),
                           key=lambda e: (e.lower, e.power)) for size in sizes}
        gate = next((e for size, e in worst.items()
                     if math.isclose(size, svi.size, rel_tol=1e-9)), None)
        curve = [(size, e.refuted, e.runs, float(e.lower)) for size, e in worst.items()]
        mdv = next((c[0] for c in curve if c[3] >= POWER_WANTED), None)
        under = mdv is None or mdv > svi.size * (1 + 1e-9)
        needs = ""
        if under:
            if gate is None:
                needs = f"plant a violation at the SVI ({svi.size:g}) and run it"
            elif gate.power <= POWER_WANTED:
                needs = (f"these settings: {gate.refuted}/{gate.runs} refuted at the SVI, a "
                         f"rate ≤ {POWER_WANTED:g}; more validation draws or a wider grid")
            else:
                more = draws_to_decide(gate.refuted, gate.runs, POWER_WANTED,
                                       confidence=1 - 2 * (1 - POWER_CONFIDENCE))
                needs = (f"needs {more} more planted runs at the SVI (if the rate "
                         f"{gate.power:.2f} persisted)" if more is not None else
                         "these settings: no feasible number of planted runs")
        out.append(PartPower(svi.part, to_jsonable(svi), None if gate is None else
                             to_jsonable(gate), 0.0 if gate is None else float(gate.lower),
                             mdv, curve, under, needs))
    return out


def final_verdict(raw: Verdict, power: float | None, identity: bool = False) -> Verdict:
    """The verdict a check prints from the verdict of its data and its power's lower bound.

    * ``power`` (the one-sided 95 % Clopper–Pearson lower bound of the power at the SVI —
      the smallest over the decisive parts) None (not measured) or < ``POWER_WANTED`` (0.8):
      *underpowered* — unless the data were *out of reach*, which stays (nothing was
      measured that power could qualify);
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


#: The pre-registered rule over the seeds of a check's decisive run (``seed_rule``).
SEED_RULE = ("over the seeds of the decisive run: refuted when more than half of them are "
             "refuted; holds (exact identity) when every one holds (is one); out of reach "
             "when every one is; inconclusive otherwise")


def seed_rule(verdicts) -> Verdict:
    """The verdict of a check over the seeds of its decisive run (``SEED_RULE``).

    The power is measured on single-seed decisions; when one seed refutes a planted
    violation with probability p ≥ 1/2, "more than half of n seeds refute" does so with
    probability ≥ p, so the single-seed power is a lower bound for this rule.

    Arguments:
        verdicts: non-empty sequence of ``Verdict`` (or values), one per seed.

    Raises:
        ValueError: an empty sequence or an unknown verdict.
    """
    verdicts = [Verdict(v) for v in verdicts]
    if not verdicts:
        raise ValueError("verdicts must not be empty")
    if 2 * sum(v == Verdict.REFUTED for v in verdicts) > len(verdicts):
        return Verdict.REFUTED
    if all(v == Verdict.EXACT_IDENTITY for v in verdicts):
        return Verdict.EXACT_IDENTITY
    if all(v in (Verdict.HOLDS, Verdict.EXACT_IDENTITY) for v in verdicts):
        return Verdict.HOLDS
    if all(v == Verdict.OUT_OF_REACH for v in verdicts):
        return Verdict.OUT_OF_REACH
    return Verdict.INCONCLUSIVE


def holm_parts(parts: dict, alpha: float = 0.025) -> dict:
    """Family-wise control over the decisive parts of one check (Holm 1979).

    Each part is a dict with ``verdict`` (its verdict at its own level) and ``p_refute`` (the
    one-sided p-value of the claim at that part: small values refute; NaN or missing: a
    part decided without a p-value, e.g. an exact part, left out of the family). A part
    refuted at its own level stays refuted only when Holm's adjusted p-value
    (``inference.holm``) is ≤ ``alpha``; otherwise it becomes *inconclusive*.

    Arguments:
        parts: name -> part dict (not modified).
        alpha: the family-wise error of a false refutation (0.025: the one-sided tail of a
            two-sided 95 % interval).

    Returns:
        name -> a copy of the part dict with ``p_adjusted`` and ``verdict_raw`` added and
        ``verdict`` adjusted.
    """
    names = list(parts)
    p = np.array([float(parts[n].get("p_refute", float("nan"))) for n in names])
    adjusted = holm(p, alpha).p_adjusted if names else np.array([])
    out = {}
    for n, q in zip(names, adjusted):
        part = dict(parts[n])
        part["verdict_raw"] = part["verdict"]
        part["p_adjusted"] = float(q)
        if Verdict(part["verdict"]) == Verdict.REFUTED and np.isfinite(q) and q > alpha:
            part["verdict"] = Verdict.INCONCLUSIVE.value
        out[n] = part
    return out


def subset_or_none(value, name: str, allowed) -> tuple | None:
    """A check's optional selection of its parts (or simulations): None, or ``value`` as a
    tuple when it is a non-empty subset of ``allowed``.

    Arguments:
        value: None or an iterable of names. name: the parameter's name, for the error.
        allowed: the names it may hold (shown in the error as given).

    Raises:
        ValueError: ``value`` empty or naming something outside ``allowed``, naming ``name``.

    Source: sparselab's check framework (docs/checks.md, "How a check decides")."""
    if value is None:
        return None
    value = tuple(value)
    if not value or not set(value) <= set(allowed):
        raise ValueError(f"{name} must be None or a non-empty subset of {allowed}, got "
                         f"{value!r}")
    return value


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
            ``rule``, ``planted`` (name → description), ``n_power``, ``power_wanted``,
            ``svi``, ``seed_rule``, ``seeds``.
        settings: the pre-registered settings in one line.
        svi: the decisive parts' smallest violations of interest (``SVI`` as dicts; empty:
            none declared — the power then gates on every plant, with no stated SVI).
        mdv: part -> its ``PartPower`` (as a dict): SVI, gate at the SVI, MDV, power curve.
        power_lower: the one-sided 95 % Clopper–Pearson lower bound of the power that gates
            the verdict (the smallest over the parts; None: not measured).
        seed_verdicts: [{"seed", "verdict"}] of the decisive run's seeds (the first is the
            run whose details are shown), combined by ``SEED_RULE``.
        post_hoc: the choices made after seeing data (raised sample sizes, grids cut), in
            words.
        smoke: True for a tiny-preset run (``TINY_NOTE``): a smoke run that decides nothing.
        note: ``TINY_NOTE`` for a smoke run, else empty.
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
    svi: list[dict[str, Any]] = field(default_factory=list)
    mdv: dict[str, Any] = field(default_factory=dict)
    power_lower: float | None = None
    seed_verdicts: list[dict[str, Any]] = field(default_factory=list)
    post_hoc: list[str] = field(default_factory=list)
    smoke: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable dictionary of every field."""
        return to_jsonable({f.name: getattr(self, f.name) for f in fields(self)})


class CheckParams:
    """Mixin for the parameter dataclass of a check: presets by name, settings in one line.

    Subclasses are frozen dataclasses whose defaults are the quick preset; ``full()`` returns
    the full preset (override it) and ``tiny()`` the tiny one (override it with a smaller
    grid; default the quick parameters). A field ``n_power`` sets the planted runs per planted
    violation (default ``POWER_RUNS``).
    """

    @classmethod
    def tiny(cls):
        """The tiny preset: a smoke run in seconds that decides nothing (default: the quick
        parameters; ``Check.preset("tiny")`` also cuts seeds and planted runs)."""
        return cls.quick()

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
        """``tiny()``, ``quick()`` or ``full()`` by name.

        Raises:
            ValueError: an unknown preset name.
        """
        if name not in ("tiny", "quick", "full"):
            raise ValueError(f"preset must be 'tiny', 'quick' or 'full', got {name!r}")
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
    #: Choices made after seeing data (raised sample sizes, grids cut to where the claim
    #: holds), each in words; printed as ``post_hoc`` with the result.
    post_hoc: ClassVar[tuple[str, ...]] = ()

    def __init__(self, params=None):
        params = self.Params() if params is None else params
        if not isinstance(params, self.Params):
            raise ValueError(f"params must be a {self.Params.__name__}, got {type(params).__name__}")
        _check_param_types(params)
        self.params = params

    @classmethod
    def preset(cls, name: str) -> "Check":
        """The check with the ``tiny``, ``quick`` or ``full`` parameters (the full ones
        repeat the decisive run on ``SEED_RUNS_FULL`` seeds, the quick ones on ``SEED_RUNS``;
        the tiny ones run once, with at most ``TINY_POWER_RUNS`` planted runs per plant, as a
        smoke run that decides nothing).

        Raises:
            ValueError: an unknown preset name.
        """
        check = cls(cls.Params.preset(name))
        check.seed_runs = {"full": SEED_RUNS_FULL, "tiny": SEED_RUNS_TINY}.get(name, SEED_RUNS)
        check.smoke = name == "tiny"
        return check

    #: Seeds of the decisive run (``run``); ``preset("full")`` sets ``SEED_RUNS_FULL``.
    seed_runs: int = SEED_RUNS
    #: A smoke run (``preset("tiny")``): planted runs capped at ``TINY_POWER_RUNS``, every
    #: verdict but *out of reach* *underpowered*, the result labelled ``TINY_NOTE``.
    smoke: bool = False

    def planted_violations(self) -> list[Planted]:
        """The planted violations the power is measured on (override; default none, so a
        check that ships none reports *underpowered*)."""
        return []

    def smallest_violations(self) -> list[SVI]:
        """The SVI of each decisive part, fixed in code (override; default none: the power
        then gates on every plant and the output says no SVI was declared)."""
        return []

    def part_verdict(self, result: CheckResult, part: str | None) -> Verdict:
        """The verdict of one decisive part in a result (how a planted run of that part is
        counted): ``details["parts"][part]["verdict"]``, or the combined verdict of the parts
        named ``part`` followed by a space (a group, e.g. "sparse_eps d=4,k=1"); the result's
        raw verdict when ``part`` is None or "all".

        Raises:
            ValueError: a part the result does not have.
        """
        if part is None or part == "all":
            return result.raw_verdict if result.raw_verdict is not None else result.verdict
        parts = result.details.get("parts", {}) if isinstance(result.details, dict) else {}
        group = [v for k, v in parts.items() if k == part or k.startswith(part + " ")]
        if not group:
            raise ValueError(f"part {part!r} is not in the result's details['parts'] "
                             f"(has {sorted(parts)})")
        return combine_verdicts([Verdict(v["verdict"]) for v in group])

    @property
    def n_power(self) -> int:
        """Planted runs per planted violation: ``params.n_power`` or ``POWER_RUNS``."""
        return int(getattr(self.params, "n_power", POWER_RUNS))

    def _runs_of(self, planted: Planted) -> int:
        runs = self.n_power if planted.runs is None else planted.runs
        return min(runs, TINY_POWER_RUNS) if self.smoke else runs

    def preregistration(self) -> dict[str, Any]:
        """The deciding settings, fixed in code before any run: params, rule, planted
        violations (name → description), planted runs, the power wanted, the SVIs, the seed
        rule and the number of seeds."""
        return to_jsonable({
            "params": asdict(self.params), "rule": self.rule,
            "planted": {p.name: p.description for p in self.planted_violations()},
            "n_power": self.n_power, "power_wanted": POWER_WANTED,
            "power_confidence": POWER_CONFIDENCE, "confidence": CONFIDENCE,
            "svi": [asdict(v) for v in self.smallest_violations()],
            "seed_rule": SEED_RULE, "seeds": self.seed_runs,
            "smoke": self.smoke,
        })

    def seed_list(self, seed: int) -> list[int]:
        """The seeds of the decisive run: ``seed`` then ``seed_runs − 1`` derived ones
        (``child_seeds(seed, ·, 104729)``), disjoint from the planted runs' streams."""
        seed = check_seed(seed)
        return [seed] + child_seeds(seed, max(self.seed_runs, 1) - 1, 104729)

    def decide(self, seed: int = 0) -> CheckResult:
        """The check's measurement and decision alone (no power, no plots): ``verdict`` is
        what the data say by the rule. Power is measured by calling this on planted checks.

        Raises:
            ValueError: a negative seed or invalid parameters.
        """
        return self._run(check_seed(seed), None)

    def run(self, seed: int = 0, out: str | pathlib.Path | None = None,
            power: bool = True) -> CheckResult:
        """Run the check on its seeds and measure its power on the planted violations.

        Arguments:
            seed: non-negative integer; the same seed gives the same numbers. The decisive
                run is repeated on ``seed_list(seed)`` (``seed_runs`` seeds; the details and
                plots are the first's) and decided by ``SEED_RULE``. The planted runs use
                seeds derived from it (``child_seeds(seed, runs, 7919, i)``), disjoint from
                the real runs'.
            out: folder for plots (created if needed); None writes nothing.
            power: measure the power (False: the verdict is *underpowered* unless out of
                reach; for quick looks at the data, whose verdict stays in ``raw_verdict``).

        Returns:
            ``CheckResult`` with ``verdict`` (``final_verdict`` of the seeds' verdict and the
            power's lower bound), ``raw_verdict``, ``power``, ``power_interval``,
            ``power_lower``, ``power_details``, ``svi``, ``mdv``, ``seed_verdicts``,
            ``post_hoc``, ``preregistered``, ``settings`` and ``seconds`` filled in.

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
        seeds = self.seed_list(seed)
        result = self._run(seeds[0], out)
        per_seed = [result.raw_verdict if result.raw_verdict is not None else result.verdict]
        per_seed += [self._run(s, None).verdict for s in seeds[1:]]
        result = replace(result, raw_verdict=seed_rule(per_seed), seed_verdicts=[
            {"seed": s, "verdict": Verdict(v).value} for s, v in zip(seeds, per_seed)])
        estimates = []
        if power:
            for i, p in enumerate(self.planted_violations()):
                estimates.append(measure_power(p, child_seeds(seed, self._runs_of(p), 7919, i)))
        return self._with_estimates(result, estimates, preregistered,
                                    time.perf_counter() - start)

    def power_runs(self, seed: int = 0) -> list[tuple[int, int]]:
        """The planted runs ``run(seed)`` makes, as (index into ``planted_violations()``, seed
        of the run): ``Planted.runs`` (default ``n_power``) per planted violation, seeds
        ``child_seeds(seed, runs, 7919, index)``. ``sparselab reproduce --workers`` makes
        each one a task (``planted_run``) and assembles them with ``with_power``.

        Raises:
            ValueError: a negative or non-integer seed.
        """
        seed = check_seed(seed)
        return [(i, s) for i, p in enumerate(self.planted_violations())
                for s in child_seeds(seed, self._runs_of(p), 7919, i)]

    def planted_run(self, index: int, seed: int) -> Verdict:
        """The raw verdict of one planted run: ``planted_violations()[index]`` built and
        decided at ``seed`` — the verdict of the plant's part when it names one — as
        ``measure_power`` runs it.

        Raises:
            ValueError: ``index`` outside [0, number of planted violations), a bad seed.
        """
        planted = self.planted_violations()
        index = check_int(index, "index", 0, len(planted) - 1)
        built = planted[index].build()
        return built.part_verdict(built.decide(check_seed(seed)), planted[index].part)

    def with_power(self, result: CheckResult, verdicts: dict[int, list],
                   seconds: float) -> CheckResult:
        """``result`` (the real run's, made apart: ``run(seed, out, power=False)``, whose
        seeds' verdicts it carries) completed as ``run(seed)`` completes it, from planted
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
                than the plant's runs, a negative ``seconds``.
        """
        planted = self.planted_violations()
        seconds = check_real(seconds, "seconds", low=0.0)
        if verdicts and sorted(verdicts) != list(range(len(planted))):
            raise ValueError(f"verdicts must hold the runs of every planted violation "
                             f"(indices 0..{len(planted) - 1}), got indices {sorted(verdicts)}")
        counts = {i: len(v) for i, v in verdicts.items()}
        wanted = {i: self._runs_of(p) for i, p in enumerate(planted)}
        if any(n != wanted[i] for i, n in counts.items()):
            raise ValueError(f"verdicts must hold the planted runs of each planted violation "
                             f"({wanted}; n_power = {self.n_power}), got {counts}")
        estimates = ([power_estimate(p, verdicts[i]) for i, p in enumerate(planted)]
                     if verdicts else [])
        return self._with_estimates(result, estimates, self.preregistration(), seconds)

    def _with_estimates(self, result, estimates, preregistered, seconds) -> CheckResult:
        """``result`` with its final verdict from its raw verdict and the planted runs'
        ``PowerEstimate``s (``run`` and ``with_power``): with SVIs declared, the gate is the
        smallest lower bound over the parts' plants at their SVIs (a part without one
        gates at 0); without, the smallest over every plant."""
        raw = result.raw_verdict if result.raw_verdict is not None else result.verdict
        svis = self.smallest_violations()
        parts = part_powers(svis, estimates) if estimates else []
        if svis and estimates:
            gating = [e for e in estimates if e.part is not None and any(
                e.part == v.part and e.size is not None
                and math.isclose(e.size, v.size, rel_tol=1e-9) for v in svis)]
            lower = min([pp.power_lower for pp in parts], default=None)
        else:
            gating = list(estimates)
            lower = min((e.lower for e in gating), default=None)
        worst = min(gating, key=lambda e: (e.lower, e.power), default=None)
        verdict = final_verdict(raw, lower, identity=self.identity)
        if any(pp.underpowered for pp in parts) and verdict != Verdict.OUT_OF_REACH:
            verdict = Verdict.UNDERPOWERED
        if self.smoke and verdict != Verdict.OUT_OF_REACH:
            verdict = Verdict.UNDERPOWERED  # tiny decides nothing, whatever its few runs say
        return replace(
            result, verdict=verdict, raw_verdict=raw,
            power=None if worst is None else worst.power,
            power_interval=None if worst is None else (worst.ci_low, worst.ci_high),
            power_lower=lower,
            power_details=[to_jsonable(e) for e in estimates], preregistered=preregistered,
            settings=(self.params.summary() if hasattr(self.params, "summary") else "") + (
                f"; tiny: {self.seed_runs} seed, at most {TINY_POWER_RUNS} planted runs per "
                f"plant" if self.smoke else ""),
            svi=[to_jsonable(v) for v in svis],
            mdv={pp.part: to_jsonable(pp) for pp in parts},
            post_hoc=list(self.post_hoc), smoke=self.smoke,
            note=TINY_NOTE if self.smoke else "",
            seed_verdicts=result.seed_verdicts or [
                {"seed": result.seed, "verdict": Verdict(raw).value}],
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
