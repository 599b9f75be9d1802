"""The decision rules of a paired claim: the pre-registered smallest
effects of interest, the comparison and equivalence verdicts, and Holm's family-wise control
over an experiment's claims (``experiments.analysis.claims``).

Rules, fixed in code before any run:
- A comparison ("A beats B", "A underperforms B") is one paired test over all (size, seed)
  differences of the claim (``inference.paired_test``: the t test on per-seed means over
  sizes, or the exact sign-flip over seeds when its normality check fails).
- Fewer than 2 seeds, or no seed noise (sd = 0): *inconclusive (no seed noise measured)*.
- *supported*: the Holm-adjusted p ≤ ``ALPHA``, the effect in the claimed direction, and the
  minimal detectable effect (power ``POWER`` at the run's seeds, from the measured seed sd) ≤
  the SESOI; significant with MDE > SESOI, or not significant with MDE > SESOI:
  *underpowered* (the seeds that would decide are printed); significant the other way: *not
  supported*; otherwise *inconclusive*.
- *mixed* only when the per-size tests (paired t over seeds, Holm across sizes) disagree
  significantly: one size significantly better, another significantly worse.
- An equivalence ("matches", "as well as") is decided by TOST against a stated band
  (``inference.tost_paired``); *not supported* when the difference is shown beyond the band.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

#: Family-wise error level of each experiment's claims (Holm), and the level of each control.
ALPHA = 0.05

#: Power at which the minimal detectable effect is computed.
POWER = 0.8

#: The verdict of a claim whose seeds measured no noise.
NO_NOISE = "inconclusive (no seed noise measured)"


@dataclass(frozen=True)
class Sesoi:
    """A pre-registered smallest effect of interest: ``value`` in ``unit``, in short
    (``name``) and with its reason (``reason``)."""

    value: float
    unit: str
    name: str
    reason: str = ""

    def text(self) -> str:
        """The SESOI in words, for a claim's line."""
        return f"SESOI {self.value:.3g} {self.unit} ({self.name})"


#: The smallest effect of interest per claim family, fixed before any run.
SESOI = {
    "ln_error": Sesoi(float(np.log(1.1)), "Δ ln nMSE", "10 % in nMSE",
                      "a smaller gap between two models is within what a change of training "
                      "budget or data draw moves; the paper's own Table 2 gaps are 19–103 %"),
    "test_error": Sesoi(0.01, "test error", "1 point of accuracy",
                        "one image in a hundred; the papers report accuracies to 0.1–1 point"),
    "forgetting": Sesoi(0.01, "forgetting", "1 point of accuracy lost",
                        "as test error, on the accuracy lost since a task was learnt"),
    "dead_fraction": Sesoi(0.02, "dead fraction", "2 % of the units",
                           "our choice, one unit in fifty; no paper states a tolerance"),
    "error_gap": Sesoi(0.01, "error gap", "1 point of accuracy",
                       "as test error, on a difference of two models' errors"),
}


def adjust_family(claims: list, alpha: float = ALPHA) -> list:
    """Holm's adjustment over the claims of one experiment (``role`` "claim" with a finite
    ``p_value``; controls and claims without a p-value stay outside the family), then each
    tested claim's verdict, significance and diagnosis redone on its adjusted p-value.

    Arguments:
        claims: list of ``experiments.analysis.claims.Claim``.
        alpha: the family-wise level, in (0, 1).

    Returns:
        a new list, same order; ``p_adjusted`` filled (nan outside the family).

    Raises:
        ValueError: ``alpha`` not in (0, 1).

    Source: Holm 1979.
    """
    from inference import holm

    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    p = np.array([c.p_value if c.role == "claim" and c.rule is not None else np.nan
                  for c in claims], dtype=float)
    adjusted = holm(p, alpha).p_adjusted
    result = []
    for claim, p_adj in zip(claims, adjusted):
        if np.isfinite(p_adj):
            result.append(claim.rule.apply(claim, float(p_adj), alpha,
                                           family=int(np.isfinite(p).sum())))
        else:
            result.append(claim)
    return result


@dataclass(frozen=True)
class Rule:
    """How a paired claim is decided, kept with the claim so that its verdict can be redone on
    the family-adjusted p-value (``adjust_family``).

    Attributes:
        kind: "comparison" or "equivalence".
        direction: comparisons: "lower" (the first model's value is claimed lower) or
            "higher"; equivalences: "".
        stats: ``paired_difference``'s dict (mean, low, high, sd, n_seeds, p_value, test,
            mde, per_x …; equivalences add p_tost, p_beyond).
        sesoi: the claim family's ``Sesoi``; for an equivalence the band's half-width.
        band_reason: an equivalence band's source.
        diagnosis: the diagnosis shown when the verdict is not *supported*.
        unit: the differences' unit, for the significance text.
        prefix: text put before the significance (e.g. which configuration decides).
    """

    kind: str
    direction: str
    stats: dict
    sesoi: Sesoi
    band_reason: str = ""
    diagnosis: str = ""
    unit: str = "Δ ln nMSE"
    prefix: str = ""

    @property
    def p_value(self) -> float:
        return float(self.stats["p_tost"] if self.kind == "equivalence"
                     else self.stats["p_value"])

    def verdict(self, p_adjusted: float | None = None, alpha: float = ALPHA) -> str:
        """This rule's verdict at ``p_adjusted`` (default: the raw p-value)."""
        if self.kind == "equivalence":
            return equivalence_verdict(self.stats, self.sesoi.value, p_adjusted, alpha)
        return comparison_verdict(self.stats, self.sesoi.value, self.direction, p_adjusted,
                                  alpha)

    def apply(self, claim, p_adjusted: float, alpha: float = ALPHA, family: int = 1):
        """``claim`` with this rule's verdict at ``p_adjusted``, its p-values, SESOI, MDE,
        test and significance text (``family``: how many claims the adjustment spans)."""
        verdict = self.verdict(p_adjusted if np.isfinite(p_adjusted) else None, alpha)
        family = 0 if getattr(claim, "role", "claim") != "claim" else family
        return replace(claim, verdict=verdict, p_value=self.p_value, p_adjusted=p_adjusted,
                       sesoi=self.sesoi.value, mde=float(self.stats.get("mde", np.nan)),
                       test=self.test_name(),
                       significance=self.prefix + self.text(p_adjusted, family, alpha),
                       diagnosis="" if verdict == "supported" else self.diagnosis)

    def band_text(self) -> str:
        """An equivalence's band in words: "within ±b" or "not worse than +b"."""
        low, high = self.stats.get("band", (-self.sesoi.value, self.sesoi.value))
        return (f"not worse than {high:+.3g}" if low == -np.inf else
                f"within ±{high:.3g}" if low == -high else f"within [{low:+.3g}, {high:+.3g}]")

    def test_name(self) -> str:
        if self.kind == "equivalence":
            low = self.stats.get("band", (-1.0, 1.0))[0]
            what = "non-inferiority t test" if low == -np.inf else "TOST"
            return f"{what} (paired, on seed means) {self.band_text()}"
        return str(self.stats.get("test", ""))

    def text(self, p_adjusted: float, family: int, alpha: float = ALPHA) -> str:
        """The decision in words: effect and interval, test, raw and adjusted p (``family``:
        the claims adjusted together; 0 for a control, decided alone), SESOI, MDE and, where
        they fall short, the seeds that would decide."""
        s = self.stats
        n = s.get("n_seeds", 0)
        if not np.isfinite(s.get("mean", np.nan)):
            return "no seed common to both models: no paired comparison"
        text = (f"paired over {n} seed{'s' if n != 1 else ''}: mean {self.unit} = "
                f"{s['mean']:+.4g}")
        if self.unit == "Δ ln nMSE":
            text += f" (ratio ×{np.exp(s['mean']):.2f})"
        if not np.isfinite(s.get("p_value", np.nan)):
            return text + "; " + NO_NOISE + f"; {self.sesoi.text()}"
        text += f" [{s['low']:+.4g}, {s['high']:+.4g}] (t, 95 %)"
        if self.kind == "equivalence":
            text += f"; {self.test_name()} ({self.band_reason}): p = {s['p_tost']:.3g}"
        else:
            text += f"; {s['test']}: p = {s['p_value']:.3g}"
        if np.isfinite(s.get("p_raw", np.nan)):
            text += f" (its own p {s['p_raw']:.3g}, Holm over the configurations tested)"
        text += (f", Holm-adjusted over {family} claim{'s' if family != 1 else ''}: "
                 f"{p_adjusted:.3g} (α = {alpha:g})" if family else
                 f", decided alone at α = {alpha:g} (a control: outside the family)")
        mde = s.get("mde", np.nan)
        text += (f"; {self.sesoi.text()}" if self.kind != "equivalence" else
                 f"; margin {self.sesoi.value:.3g} {self.sesoi.unit}") + \
            f"; MDE {mde:.3g} (power {POWER:g} at {n} seeds)"
        if not mde <= self.sesoi.value:
            need = needed_seeds(s, self.sesoi.value)
            if need and str(s.get("test", "")).startswith("sign-flip"):
                # the exact sign-flip over n seeds cannot go below p = 2 / 2^n (two-sided)
                need = max(need, sign_flip_seeds(alpha))
            text += (f" > SESOI: {need} seeds would detect the SESOI with power {POWER:g}"
                     if need else " > SESOI, beyond reach of any seed count tried")
        per_x = s.get("per_x")
        if per_x is not None and len(per_x) > 1 and "significant" in per_x:
            text += (f"; per size (Holm over sizes), "
                     f"{int((per_x['significant'] & (per_x['mean'] < 0)).sum())} significantly "
                     f"lower, {int((per_x['significant'] & (per_x['mean'] > 0)).sum())} "
                     f"significantly higher of {len(per_x)}")
        return text


def needed_seeds(stats: dict, sesoi: float) -> int | None:
    """The seeds at which a paired t test on seed means would detect ``sesoi`` with power
    ``POWER`` at level ``ALPHA``, from the measured sd of the seed means
    (``inference.seeds_needed``); None without a measured sd or beyond its search.

    Raises:
        ValueError: ``sesoi`` not a finite number > 0."""
    from inference import seeds_needed

    if not (isinstance(sesoi, (int, float)) and not isinstance(sesoi, bool)
            and 0 < sesoi < np.inf):
        raise ValueError(f"sesoi must be a finite number > 0, got {sesoi!r}")
    sd = stats.get("sd", np.nan)
    if not (np.isfinite(sd) and sd > 0):
        return None
    return seeds_needed(float(sesoi), float(sd), ALPHA, POWER)


def sign_flip_seeds(alpha: float = ALPHA) -> int:
    """The fewest seeds at which the exact two-sided sign-flip test over seeds can reach
    p ≤ ``alpha`` at all: its smallest p-value is 2 / 2^n (every seed's difference of one
    sign), so n = ⌈1 − log2 α⌉ (6 at α = 0.05). Below it the test's MDE is infinite.

    Raises:
        ValueError: ``alpha`` not in (0, 1)."""
    if not (isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and 0 < alpha < 1):
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    n = 1
    while 2.0 ** (1 - n) > alpha:
        n += 1
    return n


def _noise(stats: dict) -> bool:
    return (stats.get("n_seeds", 0) >= 2 and np.isfinite(stats.get("p_value", np.nan))
            and stats.get("sd", 0) > 0)


def comparison_verdict(stats: dict, sesoi: float, direction: str = "lower",
                       p_adjusted: float | None = None, alpha: float = ALPHA) -> str:
    """The verdict of a directional paired claim (module docstring's rules).

    Arguments:
        stats: ``paired_difference``'s dict: "mean", "p_value", "sd", "n_seeds", "mde",
            "mixed" (bool).
        sesoi: the smallest effect of interest, > 0, in the differences' unit.
        direction: "lower" (differences claimed < 0) or "higher".
        p_adjusted: the family-adjusted p-value; None: the raw one.
        alpha: the level, in (0, 1).

    Returns:
        "supported", "not supported", "underpowered", "inconclusive", "mixed" or
        ``NO_NOISE``.

    Raises:
        ValueError: ``direction`` not "lower"/"higher"; ``sesoi`` not > 0; ``alpha`` not in
            (0, 1); ``p_adjusted`` not in [0, 1]; ``stats`` without the keys above.

    Source: the rules of ``experiments.analysis.claims`` (its module docstring).
    """
    p = _checked(stats, sesoi, alpha, p_adjusted, ("mean", "p_value", "sd", "n_seeds", "mde"))
    if direction not in ("lower", "higher"):
        raise ValueError(f"direction must be 'lower' or 'higher', got {direction!r}")
    if not _noise(stats):
        return NO_NOISE
    if stats.get("mixed", False):
        return "mixed"
    claimed = stats["mean"] < 0 if direction == "lower" else stats["mean"] > 0
    powered = stats["mde"] <= sesoi
    if p <= alpha:
        if not claimed:
            return "not supported"
        return "supported" if powered else "underpowered"
    return "inconclusive" if powered else "underpowered"


def equivalence_verdict(stats: dict, band: float, p_adjusted: float | None = None,
                        alpha: float = ALPHA) -> str:
    """The verdict of an equivalence claim against its band (``equivalence_stats``; ``band``
    its upper edge):
    *supported* when the (adjusted) TOST p ≤ α and the MDE ≤ band; *not supported* when the
    difference is shown beyond the band ("p_beyond" ≤ α); *underpowered* when the MDE >
    band; else *inconclusive*; ``NO_NOISE`` without seed noise.

    Arguments:
        stats: ``paired_difference``'s dict with "p_tost" and "p_beyond"
            (``equivalence_stats``).
        band: the band's half-width, > 0.
        p_adjusted, alpha: as ``comparison_verdict`` (p_adjusted replaces "p_tost").

    Raises:
        ValueError: as ``comparison_verdict``.

    Source: Schuirmann 1987.
    """
    p = _checked(stats, band, alpha, p_adjusted, ("mean", "p_tost", "p_beyond", "sd",
                                                  "n_seeds", "mde"), key="p_tost", name="band")
    if not _noise(stats):
        return NO_NOISE
    powered = stats["mde"] <= band
    if p <= alpha:
        return "supported" if powered else "underpowered"
    if stats["p_beyond"] <= alpha:
        return "not supported"
    return "inconclusive" if powered else "underpowered"


def _checked(stats, sesoi, alpha, p_adjusted, keys, key="p_value", name="sesoi") -> float:
    if not isinstance(stats, dict) or any(k not in stats for k in keys):
        raise ValueError(f"stats must be a dict with keys {keys}, got "
                         f"{sorted(stats) if isinstance(stats, dict) else stats!r}")
    if not (isinstance(sesoi, (int, float)) and not isinstance(sesoi, bool) and
            0 < sesoi < np.inf):
        raise ValueError(f"{name} must be a finite number > 0, got {sesoi!r}")
    if not (isinstance(alpha, float) and 0 < alpha < 1):
        raise ValueError(f"alpha must be a float in (0, 1), got {alpha!r}")
    if p_adjusted is None:
        return float(stats[key])
    if not (isinstance(p_adjusted, (int, float)) and not isinstance(p_adjusted, bool)
            and 0 <= p_adjusted <= 1):
        raise ValueError(f"p_adjusted must be a number in [0, 1], got {p_adjusted!r}")
    return float(p_adjusted)


def equivalence_stats(stats: dict, band: float, lower: float | None = None) -> dict:
    """``stats`` (``paired_difference``'s dict) with the equivalence tests of its per-seed
    values against the band (``lower``, ``band``) — ``lower`` None: −``band`` (TOST, "matches");
    −inf: non-inferiority ("as well as": not worse by more than ``band``): "p_tost"
    (``inference.tost_paired``), "p_beyond" (``inference.beyond_band_p``), both nan without
    seed noise, and "band" (lower, band).

    Raises:
        ValueError: ``band`` not finite and > 0; ``lower`` not None, −inf or a finite number
            < ``band``; ``stats`` without "seed_values".
    """
    from inference import beyond_band_p, tost_paired

    if not (isinstance(band, (int, float)) and not isinstance(band, bool) and 0 < band < np.inf):
        raise ValueError(f"band must be a finite number > 0, got {band!r}")
    lower = -float(band) if lower is None else lower
    if not (isinstance(lower, (int, float)) and not isinstance(lower, bool)
            and -np.inf <= lower < band):
        raise ValueError(f"lower must be None, -inf or a number < band, got {lower!r}")
    if "seed_values" not in stats:
        raise ValueError("stats must be paired_difference's dict (with 'seed_values')")
    values = np.asarray(stats["seed_values"], dtype=float)
    result = dict(stats, p_tost=np.nan, p_beyond=np.nan, band=(float(lower), float(band)))
    if len(values) and np.isfinite(stats.get("p_value", np.nan)):
        result["p_tost"] = tost_paired(values, lower, band).p_value
        result["p_beyond"] = beyond_band_p(values, lower, band)
    return result


def best_of(candidates: list[tuple[str, dict]], kind: str,
            direction: str = "lower") -> tuple[str, dict, str]:
    """The decision of "some configuration does it" over ``candidates`` [(label, stats)], all
    tested (no post-hoc winner): the configuration with the smallest p-value in the claimed
    direction decides, at the Holm-adjusted p of the family of candidates (its smallest
    adjusted p is min(1, m · p_min)); when no configuration leans the claimed way, the claim is
    refuted only if every one is (an intersection–union test: the largest p decides,
    unadjusted). Equivalences use "p_tost" to support and the largest "p_beyond" to refute.

    Arguments:
        candidates: non-empty list of (label, stats) with ``paired_difference``'s dicts
            (equivalences: ``equivalence_stats``'s).
        kind: "comparison" or "equivalence"; direction: "lower" or "higher" (comparisons).

    Returns:
        (deciding label, its stats with the family's p in "p_value" / "p_tost" and the raw
        one in "p_raw", a text naming every candidate's p).

    Raises:
        ValueError: no candidates; a bad ``kind`` or ``direction``.

    Source: Holm 1979; Berger 1982 (intersection–union tests).
    """
    if not candidates:
        raise ValueError("candidates must hold at least one (label, stats) pair")
    if kind not in ("comparison", "equivalence") or direction not in ("lower", "higher"):
        raise ValueError(f"kind must be 'comparison' or 'equivalence' and direction 'lower' "
                         f"or 'higher', got {kind!r}, {direction!r}")
    key = "p_tost" if kind == "equivalence" else "p_value"
    m = sum(np.isfinite(s.get(key, np.nan)) for _, s in candidates)
    text = "all tested: " + "; ".join(f"{label} p = {s.get(key, np.nan):.3g}"
                                      for label, s in candidates)

    def leans(s):
        return kind == "equivalence" or (s["mean"] < 0 if direction == "lower"
                                         else s["mean"] > 0)

    finite = [(label, s) for label, s in candidates if np.isfinite(s.get(key, np.nan))]
    if not finite:
        return candidates[0][0], dict(candidates[0][1], p_raw=np.nan), text
    leaning = [(label, s) for label, s in finite if leans(s)]
    if leaning:
        label, s = min(leaning, key=lambda c: c[1][key])
        stats = dict(s, p_raw=s[key], **{key: min(1.0, m * s[key])})
        if kind == "equivalence":  # refuted only if every configuration is (an untested
            stats["p_beyond"] = (max(c.get("p_beyond", np.nan) for _, c in candidates)
                                 if m == len(candidates) else np.nan)  # one never is)
        return label, stats, text + f" (Holm over {m}: the smallest × {m})"
    label, s = max(finite, key=lambda c: c[1][key])
    if m < len(candidates):  # an untested configuration is not refuted: nothing decides
        return label, dict(s, p_raw=s[key], **{key: np.nan}), text + " (none leans the " \
            "claimed way, and some were not tested: no refutation)"
    return label, dict(s, p_raw=s[key]), text + " (none leans the claimed way: the largest " \
                                                "p decides, intersection–union)"
