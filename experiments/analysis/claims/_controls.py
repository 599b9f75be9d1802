"""Each experiment's negative and positive controls, from the reference model's rows, decided
by the same paired rule as its claims (``experiments.analysis.claims``).

The reference's rows are those at the run's seeds plus, where the config has them, its
control seeds (``experiments.runner.specs.ExperimentConfig.control_seeds``: seeds at which
only the reference model runs, cheap beside the compared models). Both controls use the
sizes the reference has at every one of those seeds.

- Negative control: the reference model against itself on disjoint seeds at the same sizes:
  the sorted seeds split in two halves (seeds[:h] against seeds[h:2h], h = ⌊n_seeds / 2⌋,
  paired in order). It must not read *supported*. With h < 2 there is a single disjoint
  pair: no seed noise can be measured, the control reads *inconclusive (no seed noise
  measured)*; with MDE > SESOI it reads *underpowered*. Either way it could not have read
  *supported*: a control that cannot fail checks nothing, so ``control_status`` says "COULD
  NOT FAIL" and the report counts the experiment's verdicts as unchecked, like a failed
  control's.
- Positive control: the reference model at x against itself at x' ≤ x/4 (its widest size at
  most a quarter of x; more capacity, lower error), over every such pair and every seed. It
  must read *supported*: the effect is large (a factor 4 in width), but *supported* also
  needs the MDE from the measured seed sd ≤ the SESOI, which is what the control seeds buy.

Controls stay outside the experiment's family-wise adjustment: each is decided at ``ALPHA``
alone, which makes the negative control's test no easier to pass than a claim's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.analysis.claims._paired import Claim, claim_line, decided, paired_difference
from experiments.analysis.claims._rules import NO_NOISE, Rule, Sesoi

#: The roles a control claim carries.
CONTROL_ROLES = ("negative control", "positive control")

#: The statuses of a control (``control_status``) that leave its experiment's verdicts
#: unchecked: one read the wrong way, or one that could not have failed.
CONTROL_DEFECTS = ("FAILED", "COULD NOT FAIL")

#: The smallest ratio x / x' of the positive control's pairs.
POSITIVE_RATIO = 4.0


def _quarter_pairs(sizes) -> list[tuple[float, float]]:
    """(x, x') with x' the largest size ≤ x / ``POSITIVE_RATIO``; none for non-numeric sizes."""
    try:
        sizes = sorted(float(s) for s in sizes)
    except (TypeError, ValueError):  # sizes that are no numbers (a task name): no pairs
        return []
    pairs = []
    for x in sizes:
        below = [s for s in sizes if s <= x / POSITIVE_RATIO]
        if below:
            pairs.append((x, below[-1]))
    return pairs


def control_claims(name: str, table: pd.DataFrame, reference: str, x: str, sesoi: Sesoi,
                   unit: str = "Δ ln nMSE", regime: str = "", sizes: str = "",
                   context: str = "", control_seeds=()) -> list[Claim]:
    """The negative and positive controls of one experiment (module docstring).

    Arguments:
        name: the experiment.
        table: the reference model's values by ``x`` (rows, ascending) and seed (columns),
            the run's seeds and its control seeds: ``seed_log_errors`` for the synthetic
            experiments, raw test errors for real data; lower is better. Only the sizes
            every seed has are used.
        reference: the reference model's label; x: the size column's name.
        sesoi: the claim family's SESOI (the controls use the claims' rule).
        unit: the differences' unit; regime: the rows' fit; sizes: the run's sizes text;
        context: appended to the control's line (e.g. the target).
        control_seeds: which of the table's seeds are control seeds (only the reference ran
            there), for the control's line; () for none.

    Returns:
        [negative control, positive control] as ``Claim`` with ``role`` set; a control the
        rows cannot form (one seed, one size) reads *not tested*.

    Raises:
        TypeError: ``table`` is not a DataFrame.
    """
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"table must be a DataFrame of values by x and seed, got "
                        f"{type(table).__name__}")
    where = f", {context}" if context else ""
    common = dict(regime=regime, sizes=sizes, source="experiments.analysis.claims, controls")
    table = table.dropna(axis=0, how="any")  # the sizes every seed has
    seeds = sorted(table.columns)
    control = sorted(set(control_seeds) & set(seeds))
    half = len(seeds) // 2
    first, second = seeds[:half], seeds[half:2 * half]
    origin = (f"a split of the run's seeds and {len(control)} control seeds, at which only "
              f"{reference} runs" if control else
              "a split of the run's seeds: the sweep runs every model on the same seeds")
    negative_text = claim_line(f"negative control: {reference} on seeds {_seed_list(first)} vs "
                               f"itself on seeds {_seed_list(second)} ({origin}), same "
                               f"{x}{where}; must not read supported", regime)
    claims = []
    if half and len(table.index):
        a = table[first].set_axis(range(half), axis=1)
        b = table[second].set_axis(range(half), axis=1)
        stats = paired_difference(a, b, [(v, v) for v in table.index])
        vacuous = ("; only one disjoint seed pair: no seed noise can be measured, so this "
                   "control cannot fail" if half < 2 else "")
        claims.append(decided(Claim(name, negative_text, "", f"{half} disjoint seed "
                                    f"pair{'s' if half != 1 else ''} over {len(table.index)} "
                                    f"{x}{vacuous}", role="negative control", **common),
                              Rule("comparison", "lower", stats, sesoi, unit=unit)))
    else:
        claims.append(Claim(name, negative_text, "not tested", "fewer than 2 seeds: no "
                            "disjoint seeds", role="negative control", **common))
    pairs = _quarter_pairs(table.index)
    over = f" (over {len(seeds)} seeds, {len(control)} of them control seeds)" if control else ""
    positive_text = claim_line(f"positive control: {reference} at {x} x beats itself at x' ≤ "
                               f"x/{POSITIVE_RATIO:g}{where}{over}; must read supported", regime)
    if pairs:
        stats = paired_difference(table, table, pairs)
        evidence = "; ".join(f"{v:g} vs {r:g}: mean {unit} "
                             f"{float(np.nanmean(table.loc[v] - table.loc[r])):+.3g}"
                             for v, r in pairs)
        claims.append(decided(Claim(name, positive_text, "", evidence,
                                    role="positive control", **common),
                              Rule("comparison", "lower", stats, sesoi, unit=unit)))
    else:
        claims.append(Claim(name, positive_text, "not tested", f"no two {x} values a factor "
                            f"{POSITIVE_RATIO:g} apart", role="positive control", **common))
    return claims


def _seed_list(seeds) -> str:
    """Seeds in a control's line: all of them up to 6, else "[0, 1, …, 9] (n seeds)"."""
    seeds = [int(s) if float(s).is_integer() else s for s in seeds]
    if len(seeds) <= 6:
        return str(seeds)
    return f"[{seeds[0]}, {seeds[1]}, …, {seeds[-1]}] ({len(seeds)} seeds)"


def control_status(role: str, verdict: str) -> str:
    """A control's status from its verdict: a negative control "FAILED" when *supported*,
    "COULD NOT FAIL" when it could not have read *supported* (no seed noise measured, or
    *underpowered*: MDE > SESOI), else "passed"; a positive control "passed" only when
    *supported*, else "FAILED"; "not run" for *not tested*. An experiment with a control
    "FAILED" or "COULD NOT FAIL" has unchecked verdicts (``CONTROL_DEFECTS``).

    Raises:
        ValueError: ``role`` not one of ``CONTROL_ROLES``.
    """
    if role not in CONTROL_ROLES:
        raise ValueError(f"role must be one of {CONTROL_ROLES}, got {role!r}")
    verdict = str(verdict)
    if verdict == "not tested":
        return "not run"
    if role == "negative control":
        if verdict == "supported":
            return "FAILED"
        could_not_fail = verdict == NO_NOISE or verdict == "underpowered"
        return "COULD NOT FAIL" if could_not_fail else "passed"
    return "passed" if verdict == "supported" else "FAILED"
