"""The real-data experiments' paired claims (``experiments.papers.real_data``): the rules of
``experiments.analysis.claims`` (one paired test over all (size, seed) differences, the unit's
pre-registered SESOI, the MDE, Holm within the experiment: ``adjust_family``) on differences
in the measured unit, and the experiment's controls (``real_data_controls``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from experiments.analysis.claims import (SESOI, Claim, Rule, Sesoi, adjust_family, control_claims,
                                decided, paired_difference)

#: The SESOI family of each unit a real-data claim is measured in (the unit text's start).
UNIT_SESOI = {"test error": "test_error", "forgetting": "forgetting",
              "dead fraction": "dead_fraction", "error gap": "error_gap"}

__all__ = ["paired_claim", "real_data_controls", "adjust_family", "unit_sesoi", "UNIT_SESOI",
           "training_regime", "shared_regime"]


def unit_sesoi(unit: str) -> Sesoi:
    """The pre-registered SESOI (``experiments.analysis.claims.SESOI``) of a claim measured in ``unit``
    (its text starts with a key of ``UNIT_SESOI``).

    Raises:
        ValueError: ``unit`` starts with none of ``UNIT_SESOI``'s keys (give ``sesoi``).
    """
    for key, family in UNIT_SESOI.items():
        if isinstance(unit, str) and unit.startswith(key):
            return SESOI[family]
    raise ValueError(f"unit must start with one of {sorted(UNIT_SESOI)} (or pass sesoi), got "
                     f"{unit!r}")


def paired_claim(name: str, text: str, frame: pd.DataFrame, better: str, worse: str, x: str,
                 value: str, source: str, unit: str, against=None, budget: str = "",
                 describe: str = "", sesoi: Sesoi | None = None,
                 regime: str | None = None) -> Claim:
    """The claim "``better`` has a lower ``value`` than ``worse``" (value: an error-like
    column — test error, forgetting, dead fraction) over the x the two share, decided by
    ``experiments.analysis.claims.comparison_verdict`` on one paired test over all (x, seed)
    differences value(better) − value(worse) (``paired_difference``), with the unit's SESOI
    (``unit_sesoi``), as a family of one: ``adjust_family`` redoes it within the experiment.

    Arguments:
        name: experiment; text: the claim with its source; frame: rows with model_label, x,
            seed and ``value``; better, worse: model labels; x: the size column.
        unit: how differences read ("test error", "dead fraction", …).
        against: x ↦ the worse model's x (default: the same x).
        budget: the preset's budget, appended to the diagnosis.
        describe: text put first in the diagnosis.
        sesoi: the smallest effect of interest; None: ``unit_sesoi(unit)``.
        regime: the training regime of the compared rows (the ``regime`` column of
            claims.csv); None: ``training_regime(frame, [better, worse])``, read from the
            rows' optimizer and lr ("" for rows without them).

    Returns:
        a ``Claim`` (effect: mean paired difference, < 0 where ``better`` is better; *not
        tested* with effect nan where the two share no x, e.g. a model the run lacks).

    Raises:
        TypeError: ``better`` or ``worse`` is not a string.
        ValueError: ``x`` or ``value`` is not a column of ``frame``; ``unit`` without a SESOI
            and ``sesoi`` None.
    """
    from experiments.analysis.tables import check_column, check_label

    check_label(better, "better")
    check_label(worse, "worse")
    check_column(frame, x, "x")
    check_column(frame, value, "value")
    sesoi = unit_sesoi(unit) if sesoi is None else sesoi
    if not isinstance(sesoi, Sesoi):
        raise TypeError(f"sesoi must be an experiments.analysis.claims.Sesoi or None, got {sesoi!r}")

    def table(label):
        rows = frame[frame["model_label"] == label].dropna(subset=[value])
        if rows.empty:
            return pd.DataFrame(dtype=float)
        return rows.pivot_table(index=x, columns="seed", values=value, aggfunc="mean")

    a, b = table(better), table(worse)
    pairs = [(v, v if against is None else against(v)) for v in a.index]
    pairs = [(v, r) for v, r in pairs if not b.empty and r in b.index]
    if regime is None:
        regime = training_regime(frame, [better, worse])
    elif not isinstance(regime, str):
        raise TypeError(f"regime must be a string or None, got {regime!r}")
    common = dict(source=source, sizes=budget, regime=regime)
    if not pairs:
        return Claim(name, text, "not tested", "no comparable configurations", **common)
    mean_a, mean_b = a.mean(axis=1), b.mean(axis=1)
    wins = sum(bool(mean_a[v] < mean_b[r]) for v, r in pairs)
    stats = paired_difference(a, b, pairs)
    where = (lambda v: "") if len(pairs) == 1 and len(a.index) == 1 else (
        lambda v: f"{x} = {_fmt(v)}: ")
    evidence = (f"{wins}/{len(pairs)} lower {unit} (mean over seeds, {better} vs {worse}) — "
                + "; ".join(f"{where(v)}{mean_a[v]:.3f} vs {mean_b[r]:.3f}" for v, r in pairs))
    diagnosis = "; ".join(p for p in (describe, _diagnosis(frame, better, worse, x, stats,
                                                           value, unit), budget) if p)
    return decided(Claim(name, text, "", evidence, **common),
                   Rule("comparison", "lower", stats, sesoi, diagnosis=diagnosis,
                        unit=f"Δ {unit}"))


def real_data_controls(name: str, frame: pd.DataFrame, reference: str, x: str, value: str,
                       unit: str, budget: str = "", sesoi: Sesoi | None = None,
                       positive: str | None = None, regime: str | None = None,
                       training: str = "", control_seeds=()) -> list[Claim]:
    """A real-data experiment's negative and positive controls on ``reference`` (lower
    ``value`` is better; ``experiments.analysis.claims.control_claims``): the negative, itself on a
    split of the seeds; the positive, itself at x against x' ≤ x/4, or — with ``positive``,
    a model known to do better (the continual experiment's joint-training oracle) —
    ``positive`` against ``reference`` by ``paired_claim``. To put after its claims, outside
    their Holm family.

    Arguments:
        name, frame, x, value, unit, budget, sesoi: as ``paired_claim``.
        reference: the reference model's label; positive: a better model's label or None.
        regime: the rows' training regime (claims.csv's ``regime``) for both controls;
            None: ``training_regime`` of the reference's rows (the negative control) and of
            ``positive``'s and the reference's (the positive one), each followed by
            ``training`` (what every row shares: epochs, batch size).
        control_seeds: the seeds of ``frame`` at which only ``reference`` was trained (extra
            seeds for the controls, ``control_claims``); () for none. The positive control
            against ``positive`` pairs the seeds both models have, so they do not enter it.

    Returns:
        [negative control, positive control] (``Claim.role`` set).

    Raises:
        TypeError: ``reference`` or ``positive`` is not a string (None for ``positive``).
        ValueError: ``x`` or ``value`` is not a column of ``frame``; ``unit`` without a SESOI
            and ``sesoi`` None.
    """
    from dataclasses import replace

    from experiments.analysis.tables import check_column, check_label

    check_label(reference, "reference")
    if positive is not None:
        check_label(positive, "positive")
    check_column(frame, x, "x")
    check_column(frame, value, "value")
    sesoi = unit_sesoi(unit) if sesoi is None else sesoi
    pair_regime = regime
    if regime is None:
        regime = training_regime(frame, [reference], training)
        pair_regime = training_regime(frame, [positive or reference, reference], training)
    rows = frame[frame["model_label"] == reference].dropna(subset=[value])
    table = (rows.pivot_table(index=x, columns="seed", values=value, aggfunc="mean")
             if len(rows) else pd.DataFrame(dtype=float))
    negative, quarter = control_claims(name, table, reference, x, sesoi, unit=f"Δ {unit}",
                                       regime=regime, sizes=budget,
                                       control_seeds=control_seeds)
    if positive is None:
        return [negative, quarter]
    claim = paired_claim(name, f"positive control: {positive} has a lower {unit} than "
                         f"{reference}; must read supported", frame, positive, reference, x,
                         value, "experiments.analysis.claims, controls", unit, budget=budget,
                         sesoi=sesoi, regime=pair_regime)
    claim = replace(claim, role="positive control")
    if claim.rule is not None:  # decided again as a control: alone, outside the family
        claim = claim.rule.apply(claim, claim.rule.p_value)
    return [negative, claim]


def training_regime(frame: pd.DataFrame, labels, common: str = "") -> str:
    """The training regime of the rows of the models ``labels`` (their ``optimizer`` and
    ``lr`` columns, as ``experiments.kinds.continual_harness.run_continual_model`` writes them), one part per
    distinct (optimizer, lr) naming its models, then ``common`` (what every row shares: epochs,
    batch size); for claims.csv's ``regime``. E.g. "SGD lr 0.3 (SDMLP); SGD lr 0.03 (ReLU
    MLP); 5 epochs a task, batch 64".

    Arguments:
        frame: result rows with ``model_label`` (and ``optimizer``, ``lr`` where recorded).
        labels: model labels (strings); those without rows are skipped.
        common: text appended as the last part ("" for none).

    Returns:
        the regime text; ``common`` alone when the rows carry no optimizer.

    Raises:
        TypeError: a label or ``common`` that is not a string.
    """
    if not isinstance(common, str):
        raise TypeError(f"common must be a string, got {common!r}")
    labels = list(labels)
    for label in labels:
        if not isinstance(label, str):
            raise TypeError(f"labels must be model labels (strings), got {label!r}")
    parts: dict[str, list[str]] = {}
    if "optimizer" in frame.columns and "model_label" in frame.columns:
        for label in labels:
            rows = frame[frame["model_label"] == label].dropna(subset=["optimizer"])
            for r in rows.drop_duplicates(subset=[c for c in ("optimizer", "lr")
                                                   if c in rows.columns]).itertuples():
                name = {"sgd": "SGD", "adam": "Adam"}.get(str(r.optimizer), str(r.optimizer))
                lr = getattr(r, "lr", float("nan"))
                key = name + (f" lr {lr:g}" if isinstance(lr, (int, float, np.number))
                              and np.isfinite(lr) else "")
                if label not in parts.setdefault(key, []):
                    parts[key].append(label)
    text = [f"{key} ({', '.join(models)})" for key, models in parts.items()]
    return "; ".join(text + ([common] if common else []))


def shared_regime(config) -> str:
    """The training regime every model of an image experiment shares (claims.csv's
    ``regime``), from its config (``CifarConfig``: Adam; ``CometImagesConfig``: its
    ``optimizer``): e.g. "Adam lr 0.001, 10 epochs, batch 64 (every model)".

    Raises:
        TypeError: ``config`` lacks epochs, batch_size or lr.
    """
    missing = [f for f in ("epochs", "batch_size", "lr") if not hasattr(config, f)]
    if missing:
        raise TypeError(f"config must be an image experiment's config with epochs, batch_size "
                        f"and lr, got {type(config).__name__} lacking {missing}")
    optimizer = str(getattr(config, "optimizer", "adam"))
    name = {"sgd": "SGD", "adam": "Adam"}.get(optimizer, optimizer)
    return (f"{name} lr {config.lr:g}, {config.epochs} epochs, batch {config.batch_size} "
            f"(every model)")


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


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
    elif not np.isfinite(stats["low"]):
        parts.append("no seed noise measured (fewer than 2 seeds or identical differences)")
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
