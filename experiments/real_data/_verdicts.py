"""The real-data experiments' paired claims (``experiments.real_data``): the verdict of
``experiments.claims.comparison_verdict`` on differences in the measured unit."""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.claims import Claim, comparison_verdict, paired_difference


def paired_claim(name: str, text: str, frame: pd.DataFrame, better: str, worse: str, x: str,
                 value: str, source: str, unit: str, against=None, budget: str = "",
                 describe: str = "") -> Claim:
    """The claim "``better`` has a lower ``value`` than ``worse``" (value: an error-like
    column — test error, forgetting, dead fraction) at every x the two share, decided by
    ``experiments.claims.comparison_verdict`` on the paired differences across seeds
    (``paired_difference``: per seed, mean over x of value(better) − value(worse)).

    Arguments:
        name: experiment; text: the claim with its source; frame: rows with model_label, x,
            seed and ``value``; better, worse: model labels; x: the size column.
        unit: how differences read ("test error", "dead fraction", …).
        against: x ↦ the worse model's x (default: the same x).
        budget: the preset's budget, appended to the diagnosis.
        describe: text put first in the diagnosis.

    Returns:
        a ``Claim`` (effect: mean paired difference, < 0 where ``better`` is better; *not
        tested* with effect nan where the two share no x, e.g. a model the run lacks).

    Raises:
        TypeError: ``better`` or ``worse`` is not a string.
        ValueError: ``x`` or ``value`` is not a column of ``frame``.
    """
    from experiments.claims._paired import _check_column, _check_label

    _check_label(better, "better")
    _check_label(worse, "worse")
    _check_column(frame, x, "x")
    _check_column(frame, value, "value")

    def table(label):
        rows = frame[frame["model_label"] == label].dropna(subset=[value])
        if rows.empty:
            return pd.DataFrame(dtype=float)
        return rows.pivot_table(index=x, columns="seed", values=value, aggfunc="mean")

    a, b = table(better), table(worse)
    pairs = [(v, v if against is None else against(v)) for v in a.index]
    pairs = [(v, r) for v, r in pairs if not b.empty and r in b.index]
    common = dict(source=source, sizes=budget)
    if not pairs:
        return Claim(name, text, "not tested", "no comparable configurations", **common)
    mean_a, mean_b = a.mean(axis=1), b.mean(axis=1)
    wins = sum(bool(mean_a[v] < mean_b[r]) for v, r in pairs)
    stats = paired_difference(a, b, pairs)
    verdict = comparison_verdict(wins, len(pairs), stats)
    where = (lambda v: "") if len(pairs) == 1 and len(a.index) == 1 else (
        lambda v: f"{x} = {_fmt(v)}: ")
    evidence = (f"{wins}/{len(pairs)} lower {unit} (mean over seeds, {better} vs {worse}) — "
                + "; ".join(f"{where(v)}{mean_a[v]:.3f} vs {mean_b[r]:.3f}" for v, r in pairs))
    significance = _significance(stats, unit)
    diagnosis = ""
    if verdict != "supported":
        diagnosis = "; ".join(p for p in (describe, _diagnosis(frame, better, worse, x, stats,
                                                               value, unit), budget) if p)
    return Claim(name, text, verdict, evidence, source=source, effect=stats["mean"],
                 effect_low=stats["low"], effect_high=stats["high"],
                 significance=significance, diagnosis=diagnosis, sizes=budget)


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def _significance(stats: dict, unit: str) -> str:
    if not np.isfinite(stats["mean"]):
        return "no seed common to both models: no paired comparison"
    text = f"paired over {stats['n_seeds']} seeds: mean Δ {unit} = {stats['mean']:+.4f}"
    if np.isfinite(stats["low"]):
        excludes = stats["high"] < 0 or stats["low"] > 0
        per_x = stats["per_x"]
        text += (f" [{stats['low']:+.4f}, {stats['high']:+.4f}] (t, 95%); the interval "
                 f"{'excludes' if excludes else 'contains'} 0; per size, "
                 f"{int(per_x['significant'].sum())}/{len(per_x)} intervals exclude 0")
    else:
        text += "; one seed: no interval"
    return text


def _diagnosis(frame, better, worse, x, stats, value, unit) -> str:
    """Where the claimed-better model loses, and at its worst size whether it also trails on
    its training data (capacity or optimisation at this budget) or only on the test data
    (it fits the training data as well or better: overfitting)."""
    per_x = stats["per_x"].dropna(subset=["mean"])
    parts = []
    lost = per_x[per_x["mean"] >= 0]
    if len(lost):
        parts.append(f"{better} is not lower at {x} = " + ", ".join(
            f"{_fmt(r.x)} (Δ {r.mean:+.4f}" + (", significant" if r.significant else "")
            + ")" for r in lost.itertuples()))
    if np.isfinite(stats["low"]) and stats["low"] <= 0 <= stats["high"]:
        parts.append(f"the seeds do not separate the models: the paired interval "
                     f"[{stats['low']:+.4f}, {stats['high']:+.4f}] contains 0")
    if len(lost) and "train_accuracy" in frame and value == "test_error":
        worst = lost.loc[lost["mean"].idxmax()]
        mine = frame[(frame["model_label"] == better) & (frame[x] == worst["x"])]
        theirs = frame[(frame["model_label"] == worse) & (frame[x] == worst["ref"])]
        a, b = mine["train_accuracy"].mean(), theirs["train_accuracy"].mean()
        cause = ("it fits its training data as well or better, so it generalises worse"
                 if a >= b else "it fits its training data worse too: capacity or "
                 "optimisation at this training budget")
        parts.append(f"at {x} = {_fmt(worst['x'])} train accuracy {a:.3f} vs {b:.3f}: {cause}")
    return "; ".join(parts)
