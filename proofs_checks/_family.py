"""Family-wise control over the decisive parts of a check (Holm 1979), as the Lemma 4.2 checks
decide it.

A check whose verdict combines several decisive parts refutes the claim when any part is
refuted, so a false refutation anywhere in the family is what must be controlled. Each part
gets the one-sided p-value of its refutation, computed from the same data as the interval that
decides it — a scaling exponent the bootstrap p-value from its interval's resampled slopes
(``exponent_p_values``), a rate the exact binomial tail at the claimed probability
(``binomial_p_values``) — and ``holm_family`` runs Holm's step-down over the check's whole
family (``_framework.holm_parts``): a part stays refuted only where its adjusted p-value is
≤ ``FAMILY_ALPHA``, else it reads inconclusive. *Holds* needs every part to hold at its own
level, an intersection–union test (Berger 1982) whose error is at most that level without
adjustment, so the control changes refutations only. A run of some parts alone (a planted run)
counts the family's other members at p = 1, so what it refutes a full run refutes too.

Sources: Holm 1979, "A simple sequentially rejective multiple test procedure", Scandinavian
Journal of Statistics 6; Berger 1982, "Multiparameter hypothesis testing and acceptance
sampling", Technometrics 24; Davison & Hinkley 1997, §4.4.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from routing.validation import check_int, check_real
from proofs_checks._framework import Verdict, holm_parts
from proofs_checks._scaling import ExponentEstimate

__all__ = ["FAMILY_ALPHA", "FAMILY_RULE", "exponent_p_values", "binomial_p_values",
           "holm_family", "family_text", "holm_diagnosis"]

#: The family-wise error of a false refutation over a check's decisive parts (``holm_family``):
#: the one-sided tail of the two-sided 95 % interval (``_framework.CONFIDENCE``) each part is
#: decided by.
FAMILY_ALPHA = 0.025
#: How a check controls its family of decisive parts (the Lemma 4.2 checks), printed with the
#: result.
FAMILY_RULE = ("family-wise control over the decisive parts (Holm 1979): each part gets the "
               "one-sided p-value of its refutation (an exponent: (1 + #bootstrap slopes on "
               "the claim's side of the line)/(B + 1), from the resamples of its interval; a "
               "rate: the exact binomial tail at the claimed probability); a part stays "
               "refuted only where its Holm-adjusted p-value is ≤ α = 0.025, else it reads "
               "inconclusive. "
               "Holds needs every part to hold at its own one-sided 0.025 level, an "
               "intersection-union test (Berger 1982) that needs no adjustment. Parts shown, "
               "not deciding, are outside the family")


def exponent_p_values(estimate: ExponentEstimate, line: float,
                      side: str) -> tuple[float, float]:
    """The one-sided bootstrap p-values of a scaling part at the rule's line, from the
    resampled slopes its 95 % percentile interval comes from (``ExponentEstimate.p_value``).

    For a claim "exponent ≥ line" (``side`` = "at_least"), p_refute = (1 + #{β* ≥ line})/(B + 1)
    over the B finite bootstrap slopes β*, and p_hold = (1 + #{β* ≤ line})/(B + 1); for
    "exponent ≤ line" ("at_most") the sides turn round. p_refute ≤ 0.025 implies that the
    interval lies beyond the line (``decide_exponent`` refutes); the converse holds up to two
    resamples (the interval's end interpolates between order statistics).

    Arguments:
        estimate: from ``bootstrap_exponent`` (it keeps its resampled slopes).
        line: the rule's line (claimed exponent ∓ δ), in the exponent's units.
        side: "at_least" or "at_most", the claim's side.

    Returns:
        (p_refute, p_hold): floats in (0, 1], both NaN where the interval is NaN.

    Raises:
        ValueError: a bad ``side``, or an estimate without its resampled slopes.

    Source: Davison & Hinkley 1997, §4.4 (the (1 + count)/(B + 1) Monte Carlo p-value).
    """
    if side not in ("at_least", "at_most"):
        raise ValueError(f"side must be 'at_least' or 'at_most', got {side!r}")
    other = "at_most" if side == "at_least" else "at_least"
    return float(estimate.p_value(line, side)), float(estimate.p_value(line, other))


def binomial_p_values(certain: int, possible: int, trials: int,
                      claimed: float) -> tuple[float, float]:
    """The exact one-sided p-values of "P(event) ≥ claimed" from ``certain`` ≤ ``possible``
    successes of ``trials`` (``decide_probability_bounds``'s counts).

    p_refute = P(Bin(trials, claimed) ≤ possible): < 0.025 exactly when the 95 %
    Clopper–Pearson interval of ``possible`` lies below ``claimed``; p_hold =
    P(Bin(trials, claimed) ≥ certain): ≤ 0.025 exactly when that of ``certain`` lies above.

    Returns:
        (p_refute, p_hold), floats in (0, 1].

    Raises:
        ValueError: counts out of range (0 ≤ certain ≤ possible ≤ trials, trials ≥ 1) or
            ``claimed`` outside (0, 1).

    Source: Clopper & Pearson 1934 (the interval these tails invert); ``scipy.stats.binom``.
    """
    trials = check_int(trials, "trials", 1)
    possible = check_int(possible, "possible", 0, trials)
    certain = check_int(certain, "certain", 0, possible)
    claimed = check_real(claimed, "claimed", 0.0, 1.0, low_open=True, high_open=True)
    return (float(stats.binom.cdf(possible, trials, claimed)),
            float(stats.binom.sf(certain - 1, trials, claimed)))


def holm_family(parts: dict, members, alpha: float = FAMILY_ALPHA) -> tuple[dict, dict]:
    """Holm's step-down over a check's family of decisive parts (``holm_parts``), members not
    decided in this run counted at p = 1.

    A run of some part groups alone (a planted run) knows only their p-values; the other
    members of the family enter at p = 1, the least favourable value for a refutation (Holm's
    adjusted p-value of a part only falls when another part's p-value falls), so its refutations
    imply those of a full run at the same seed and its power is a lower bound on the full
    family-wise decision's.

    Arguments:
        parts: name -> part dict with ``verdict`` and ``p_refute`` (NaN: no p-value, left out
            of the family); each name one of ``members``.
        members: every decisive part of the check's full run, in order.
        alpha: the family-wise error of a false refutation, in (0, 1).

    Returns:
        (parts, family): the parts as ``holm_parts`` returns them (``p_adjusted``,
        ``verdict_raw``, ``verdict`` adjusted), and a dict stating the family: ``method``,
        ``alpha``, ``m`` (members with a p-value), ``members``, ``not_run`` (counted at p = 1),
        ``without_p`` (left out) and ``rule`` (``FAMILY_RULE``).

    Raises:
        ValueError: a part that is not a member, or ``alpha`` outside (0, 1).

    Source: Holm 1979, "A simple sequentially rejective multiple test procedure"; Berger
    1982, "Multiparameter hypothesis testing and acceptance sampling" (holds: every part).
    """
    members = list(members)
    alpha = check_real(alpha, "alpha", 0.0, 1.0, low_open=True, high_open=True)
    strangers = sorted(set(parts) - set(members))
    if strangers:
        raise ValueError(f"parts must be members of the family {members}, got {strangers}")
    not_run = [n for n in members if n not in parts]
    padded = {n: parts.get(n, {"verdict": Verdict.HOLDS.value, "p_refute": 1.0})
              for n in members}
    adjusted = holm_parts(padded, alpha)
    without_p = [n for n in members
                 if not np.isfinite(float(padded[n].get("p_refute", math.nan)))]
    family = {"method": "Holm 1979 step-down over the parts' one-sided p-values of refutation",
              "alpha": alpha, "m": len(members) - len(without_p), "members": members,
              "not_run": not_run, "without_p": without_p, "rule": FAMILY_RULE}
    return {n: adjusted[n] for n in parts}, family


def family_text(parts: dict, family: dict) -> str:
    """'family: Holm over 4 parts at α = 0.025 …: slope k=1 p 0.002 → 0.008, p_hold 1
    (refuted); …' for the printed line: each part's p-value of refutation, raw and
    Holm-adjusted, and its p-value of holding (unadjusted: intersection–union); the parts
    not run are named as counted at p = 1."""
    rows = [f"{name} p {_p(v.get('p_refute'))} → {_p(v.get('p_adjusted'))}, p_hold "
            f"{_p(v.get('p_hold'))} ({v['verdict']})" for name, v in parts.items()]
    text = (f"family: Holm over {family['m']} parts at α = {family['alpha']:g} (one-sided "
            f"p of refutation raw → adjusted; p_hold, the p of holding, needs no "
            f"adjustment): " + "; ".join(rows))
    if family["not_run"]:
        text += f"; not run here, counted at p = 1: {', '.join(family['not_run'])}"
    return text


def _p(value) -> str:
    return "n/a" if value is None or not np.isfinite(float(value)) else f"{float(value):.3g}"


def holm_diagnosis(parts: dict) -> list[str]:
    """One line per part refuted at its own level that the family-wise control did not keep
    refuted (``holm_family``): its raw and Holm-adjusted p-values."""
    return [f"{name}: refuted at its own level (p {_p(v.get('p_refute'))}) but not after Holm "
            f"(adjusted p {_p(v.get('p_adjusted'))} > {FAMILY_ALPHA:g}): inconclusive"
            for name, v in parts.items()
            if v.get("verdict_raw") == Verdict.REFUTED.value and v["verdict"] != v["verdict_raw"]]
