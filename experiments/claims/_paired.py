"""A claim "A has lower error than B" and its paired statistics across seeds, verdict and
diagnosis (``experiments.claims``)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from experiments.scaling import error_column
from routing.validation import check_choice, check_int, check_real, check_points

#: Two-sided level of every paired interval.
LEVEL = 0.95


#: The regimes, as claim lines name them.
REGIME_TEXT = {"exact": "exact least-squares top layer", "sgd": "trained with Adam", "": ""}


@dataclass(frozen=True)
class Claim:
    """A claim of a paper and what our run says about it.

    Attributes:
        experiment: experiment name.
        claim: the claim in words, with its source and regime.
        verdict: "supported", "not supported", "mixed", "inconclusive", "out of reach" or
            "not tested".
        evidence: the comparison behind the verdict (numbers are nMSEs, or MSEs for rows
            without ``eval_nmse``).
        regime: the rows' ``fit`` ("exact", "sgd"; "" when the rows carry none).
        source: paper and section the claim comes from.
        effect: the effect size (comparisons: mean paired Δ ln nMSE, < 0 where the first model
            is better; subspace: α − 2/k; Table 2: ln(best DSM / dense) at its best width).
        effect_low, effect_high: its 95 % interval (nan without one).
        significance: the effect and interval in words.
        diagnosis: when the verdict is not *supported*: what the data say carries the gap.
        sizes: the run's sizes against the paper's.
    """

    experiment: str
    claim: str
    verdict: str
    evidence: str
    regime: str = ""
    source: str = ""
    effect: float = float("nan")
    effect_low: float = float("nan")
    effect_high: float = float("nan")
    significance: str = ""
    diagnosis: str = ""
    sizes: str = ""


CLAIM_COLUMNS = [f.name for f in fields(Claim)]


#: The regimes (``fit`` values) a diagnosis speaks of; "" for rows without one.
REGIMES = ("exact", "sgd", "")


def _check_column(frame: pd.DataFrame, column, name: str) -> str:
    """``column`` (the parameter ``name``) as a column of ``frame``, else ValueError."""
    if not isinstance(column, str) or column not in frame.columns:
        raise ValueError(f"{name} must name a column of the frame "
                         f"({', '.join(map(str, frame.columns))}), got {column!r}")
    return column


def _check_label(label, name: str) -> str:
    """``label`` (the parameter ``name``) as a model label: a string, else TypeError."""
    if not isinstance(label, str):
        raise TypeError(f"{name} must be a model label (a string), got {label!r}")
    return label


# -- seeds and paired statistics ------------------------------------------------------------

def seed_log_errors(frame: pd.DataFrame, label: str, x: str,
                    y: str | None = None) -> pd.DataFrame:
    """ln of the eval error of ``label`` by ``x`` and seed: a (n_x, n_seeds) float table (mean
    of ln over duplicate rows; nan where a seed lacks that x). ``y`` defaults to
    ``error_column(frame)``; rows without ``seed`` count as seed 0. A label without rows
    gives an empty table.

    Raises:
        TypeError: ``label`` is not a string.
        ValueError: ``x`` or ``y`` is not a column of ``frame``.
    """
    _check_label(label, "label")
    _check_column(frame, x, "x")
    y = error_column(frame) if y is None else _check_column(frame, y, "y")
    rows = frame[frame["model_label"] == label].dropna(subset=[x])
    rows = rows[rows[y] > 0]
    seeds = rows["seed"] if "seed" in rows else pd.Series(0, index=rows.index)
    if rows.empty:
        return pd.DataFrame(dtype=float)
    return rows.assign(log_y=np.log(rows[y].astype(float)), seed=seeds).pivot_table(
        index=x, columns="seed", values="log_y", aggfunc="mean").sort_index()


def mean_mse(frame: pd.DataFrame, label: str, x: str) -> pd.Series:
    """Geometric mean over seeds of the eval error for ``label``, indexed by ``x``: of
    ``eval_nmse`` where the rows carry it (``error_column``: the verdict between models of one
    target is the same as on ``eval_mse``, Var(y_eval) being common), else of ``eval_mse``."""
    table = seed_log_errors(frame, label, x)
    if table.empty:
        return pd.Series(dtype=float)
    return np.exp(table.mean(axis=1, skipna=True))


def t_interval(values, level: float = LEVEL) -> tuple[float, float, float]:
    """(mean, low, high) of ``values`` (1-D, finite) with a Student-t interval at ``level``;
    low = high = nan with fewer than two values, all three nan with none.

    Raises:
        ValueError: ``values`` is not a 1-D real array or holds NaN/inf (a missing value is
            dropped by the caller, never here: a NaN would silently shrink the sample);
            ``level`` outside (0, 1).
    """
    from scipy import stats

    level = check_real(level, "level", 0.0, 1.0, low_open=True, high_open=True)
    if np.ndim(values) != 1:  # a column or a table is no sample: never flattened
        raise ValueError(f"values must be a 1-D array of numbers, got shape "
                         f"{np.shape(values)}")
    values = check_points(np.asarray(values)[:, None], 1, "values")[:, 0]
    if len(values) == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(values.mean())
    if len(values) < 2:
        return mean, float("nan"), float("nan")
    half = stats.t.ppf(0.5 + level / 2, len(values) - 1) * values.std(ddof=1) / np.sqrt(
        len(values))
    if not (np.isfinite(mean) and np.isfinite(half)):
        raise ValueError("values are too large: their mean or spread overflows float64 "
                         f"(largest |value| {np.abs(values).max():.3g})")
    return mean, float(mean - half), float(mean + half)


def paired_difference(better: pd.DataFrame, worse: pd.DataFrame,
                      pairs: list[tuple[float, float]]) -> dict:
    """The paired effect of ``better`` against ``worse`` over ``pairs`` of (x, x of worse):
    per seed present on both sides of every pair, Δ_s = mean over pairs of
    ln e_better(x, s) − ln e_worse(x', s); the mean over seeds and its t interval
    (``t_interval``); and per pair the same over that pair's common seeds.

    Arguments:
        better, worse: ``seed_log_errors`` tables.
        pairs: [(x, x')] with x in better's index and x' in worse's.

    Returns:
        {"mean", "low", "high": floats; "n_seeds": int; "per_x": DataFrame with x, ref, n,
        mean, low, high, significant (bool: the interval excludes 0)}.

    Raises:
        ValueError: ``pairs`` not a list of (x, x') pairs, or a pair not in the tables.
    """
    try:
        pairs = [(x, ref) for x, ref in pairs]
    except (TypeError, ValueError):
        raise ValueError(f"pairs must be a list of (x, x of worse) pairs, got {pairs!r}") \
            from None
    missing = [p for p in pairs if p[0] not in better.index or p[1] not in worse.index]
    if missing:
        raise ValueError(f"pairs {missing} are not in the tables (better: "
                         f"{list(better.index)}, worse: {list(worse.index)})")
    per_x, columns = [], []
    for x, ref in pairs:
        seeds = better.loc[x].dropna().index.intersection(worse.loc[ref].dropna().index)
        d = better.loc[x, seeds].to_numpy(float) - worse.loc[ref, seeds].to_numpy(float)
        mean, low, high = t_interval(d[np.isfinite(d)])
        per_x.append({"x": x, "ref": ref, "n": len(seeds), "mean": mean, "low": low,
                      "high": high, "significant": bool(np.isfinite(low)
                                                        and (high < 0 or low > 0))})
        columns.append(pd.Series(d, index=seeds))
    table = pd.concat(columns, axis=1) if columns else pd.DataFrame()
    complete = table.dropna()  # seeds present at every pair
    mean, low, high = (t_interval(complete.mean(axis=1).to_numpy(float)) if len(complete)
                       else (np.nan,) * 3)
    return {"mean": mean, "low": low, "high": high, "n_seeds": len(complete),
            "per_x": pd.DataFrame(per_x, columns=["x", "ref", "n", "mean", "low", "high",
                                                   "significant"])}


def significance_text(stats: dict, what: str = "nMSE") -> str:
    """The paired effect in words: mean Δ ln error over seeds with its interval, the ratio it
    means, and at how many x the per-x interval excludes 0."""
    if not np.isfinite(stats["mean"]):
        return "no seed common to both models: no paired comparison"
    per_x = stats["per_x"]
    text = (f"paired over {stats['n_seeds']} seed{'s' if stats['n_seeds'] != 1 else ''}: "
            f"mean Δ ln {what} = {stats['mean']:+.3f}")
    if np.isfinite(stats["low"]):
        text += (f" [{stats['low']:+.3f}, {stats['high']:+.3f}] (t, {LEVEL:.0%}), ratio "
                 f"×{np.exp(stats['mean']):.2f}; the interval "
                 + ("excludes 0" if stats["high"] < 0 or stats["low"] > 0 else "contains 0")
                 + f"; per x, {int(per_x['significant'].sum())}/{len(per_x)} intervals "
                   f"exclude 0")
    else:
        text += f", ratio ×{np.exp(stats['mean']):.2f}; one seed: no interval"
    return text


# -- diagnoses ------------------------------------------------------------------------------

def _gmean(rows: pd.DataFrame, column: str) -> float:
    values = rows[column].to_numpy(float) if column in rows else np.array([])
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.exp(np.mean(np.log(values)))) if len(values) else float("nan")


def _key_fields(key: str) -> dict:
    """name=value pairs of a model key ("lsh;n_bits=8;n_tables=1;family=sign")."""
    return dict(part.split("=", 1) for part in str(key).split(";") if "=" in part)


def comparison_diagnosis(frame: pd.DataFrame, better_label: str, worse_label: str, x: str,
                         stats: dict, regime: str, n_train: int | None = None) -> str:
    """What carries a lost comparison, from the rows: where the claimed-better model loses and
    by how much, whether the gap narrows or widens along x, and at its worst x whether it is
    already worse on its training data (approximation or, under Adam, optimisation) or only on
    the evaluation data (estimation: too many parameters for n_train); then the regime
    (``regime``: one of ``REGIMES``).

    Raises:
        ValueError: ``regime`` is not one of ``REGIMES``; ``x`` not a column of ``frame``;
            ``n_train`` neither None nor an integer >= 1.
    """
    check_choice(regime, "regime", REGIMES)
    _check_column(frame, x, "x")
    if n_train is not None:
        n_train = check_int(n_train, "n_train", 1)
    per_x = stats["per_x"].dropna(subset=["mean"])
    if per_x.empty:
        return ""
    lost = per_x[per_x["mean"] > 0]
    parts = []
    if len(lost):
        parts.append(f"{better_label} loses at {x} = "
                     + ", ".join(f"{r.x:g}" + ("" if r.ref == r.x else f" (vs {r.ref:g})")
                                 + f" (×{np.exp(r.mean):.2f}"
                                 + (", significant" if r.significant else "") + ")"
                                 for r in lost.itertuples()))
    if len(per_x) >= 2:
        first, last = per_x.iloc[0], per_x.iloc[-1]
        trend = "narrows" if abs(last["mean"]) < abs(first["mean"]) else "widens"
        if np.sign(last["mean"]) != np.sign(first["mean"]):
            trend = "changes sign"
        parts.append(f"Δ ln nMSE {first['mean']:+.2f} at {first['x']:g} → {last['mean']:+.2f} "
                     f"at {last['x']:g} ({trend} with {x})")
    if len(lost):
        worst = lost.loc[lost["mean"].idxmax()]
        mine = frame[(frame["model_label"] == better_label) & (frame[x] == worst["x"])]
        theirs = frame[(frame["model_label"] == worse_label) & (frame[x] == worst["ref"])]
        a_train, b_train = _gmean(mine, "train_nmse"), _gmean(theirs, "train_nmse")
        if np.isfinite(a_train) and np.isfinite(b_train):
            a_eval = _gmean(mine, error_column(frame))
            b_eval = _gmean(theirs, error_column(frame))
            if a_train < b_train:
                cause = ("fits its training data better but evaluates worse: estimation error "
                         "(more parameters than the data pin down"
                         + (f" at n_train = {n_train:,}" if n_train else "") + ")")
            else:
                cause = ("is worse on its training data too: the model class (approximation)"
                         + (" or the optimisation (Adam budget)" if regime == "sgd" else "")
                         + " limits it, not the sample")
            parts.append(f"at {x} = {worst['x']:g}, {better_label} train/eval nMSE "
                         f"{a_train:.3g}/{a_eval:.3g} vs {worse_label} {b_train:.3g}/"
                         f"{b_eval:.3g}: it {cause}")
    if regime == "exact":
        parts.append("regime: every frozen-feature top layer solved exactly (least squares), "
                     "so dense gets its best possible top layer; the paper trained with Adam")
    elif regime == "sgd":
        parts.append("regime: trained with Adam for a fixed budget, the same for both models")
    return "; ".join(parts)


def lsh_description(frame: pd.DataFrame, label: str) -> str:
    """The LSH model behind ``label`` in words, from its rows: family, tables, the piecewise-
    constant form, its best nMSE and at how many buckets, and the share of buckets non-empty.

    Raises:
        TypeError: ``label`` is not a string.
        ValueError: ``frame`` has no rows of ``label``, or none with a finite positive
            bucket count and error (a hash without buckets, a run whose errors are all NaN:
            there is no best nMSE to report).
    """
    rows = frame[frame["model_label"] == _check_label(label, "label")]
    if rows.empty:
        raise ValueError(f"label {label!r} has no rows in the frame (labels: "
                         f"{', '.join(map(str, pd.unique(frame['model_label'])))})")
    key = _key_fields(rows["model_key"].iloc[0]) if "model_key" in rows else {}
    family = key.get("family", "sign")
    names = {"sign": "sign hyperplanes through the origin (Charikar)",
             "affine": "affine hyperplanes", "euclidean": "Euclidean LSH with offsets",
             "uniform": "a uniform random hash"}
    tables = key.get("n_tables", "1")
    size = "size" if "size" in rows else "buckets"
    by_size = rows.groupby(size)
    errors = {s: _gmean(by_size.get_group(s), error_column(frame)) for s in by_size.groups}
    errors = {s: e for s, e in errors.items() if np.isfinite(s) and s > 0 and np.isfinite(e)}
    if not errors:
        raise ValueError(f"label {label!r} has no rows with a finite positive {size} and a "
                         f"finite {error_column(frame)}: no LSH model to describe")
    best_size = min(errors, key=errors.get)
    best = errors[best_size]
    what = "nMSE" if error_column(frame) == "eval_nmse" else "MSE"  # the column it read
    text = (f"LSH model {label}: {names.get(family, family)}, {tables} table(s), piecewise "
            f"constant (one value per bucket); best {what} {best:.3g} at {best_size:g} buckets")
    if {"nonempty_buckets", "buckets"} <= set(rows.columns) \
            and rows["nonempty_buckets"].notna().any():
        share = (rows["nonempty_buckets"] / rows["buckets"]).mean()
        text += f"; {share:.0%} of the buckets non-empty on average"
    return text


# -- the claims -----------------------------------------------------------------------------

def _regimes(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(fit value, its rows) for every fit present; [("", frame)] when rows carry none."""
    if "fit" not in frame or frame["fit"].isna().all():
        return [("", frame)]
    return [(str(fit), frame[frame["fit"] == fit]) for fit in pd.unique(frame["fit"].dropna())]


def _line(text: str, regime: str) -> str:
    return text if not regime else f"{text} [{REGIME_TEXT.get(regime, regime)}]"


def compare(name: str, text: str, frame: pd.DataFrame, better_label: str, worse_label: str,
            x: str, against=None, worse_x: str | None = None, regime: str = "",
            source: str = "", sizes: str = "", n_train: int | None = None,
            describe: str = "") -> Claim:
    """The claim "``better_label`` has lower error than ``worse_label``" at every x of the
    better model (against ``worse_label`` at ``against(x)`` when given; ``worse_x``: the column
    of the worse model's x, default ``x``), with its paired significance and, when not
    supported, ``comparison_diagnosis`` (after ``describe``, a text about the model).

    Returns:
        a ``Claim``; *not tested* (effect and interval nan: nothing was measured) when the two
        models share no comparable x.

    Raises:
        TypeError: a label is not a string.
        ValueError: a label has no rows in ``frame`` (an unknown label is refused, never
            reported as "not tested"); ``x``/``worse_x`` not a column; ``regime`` not one of
            ``REGIMES``; ``n_train`` neither None nor an integer >= 1.
    """
    labels = set(pd.unique(frame["model_label"]))
    for label, param in ((better_label, "better_label"), (worse_label, "worse_label")):
        if _check_label(label, param) not in labels:
            raise ValueError(f"{param} {label!r} has no rows in the frame (labels: "
                             f"{', '.join(sorted(map(str, labels)))})")
    _check_column(frame, x, "x")
    if worse_x is not None:
        _check_column(frame, worse_x, "worse_x")
    check_choice(regime, "regime", REGIMES)
    if n_train is not None:
        n_train = check_int(n_train, "n_train", 1)
    return _compare(name, text, frame, better_label, worse_label, x, against, worse_x, regime,
                    source, sizes, n_train, describe)


def _compare(name, text, frame, better_label, worse_label, x, against=None, worse_x=None,
             regime="", source="", sizes="", n_train=None, describe="") -> Claim:
    """``compare`` without its checks: a label without rows gives *not tested* (the claims of
    an experiment whose run lacks one of the models)."""
    better = seed_log_errors(frame, better_label, x)
    worse = seed_log_errors(frame, worse_label, worse_x or x)
    extra = dict(regime=regime, source=source, sizes=sizes)
    pairs = []
    for value in better.index:
        ref = value if against is None else against(value)
        if ref is not None and not worse.empty and ref in worse.index:
            pairs.append((value, ref))
    if not pairs:
        return Claim(name, _line(text, regime), "not tested",
                     "no comparable configurations in this run", **extra)
    geo_b, geo_w = np.exp(better.mean(axis=1)), np.exp(worse.mean(axis=1))
    wins = sum(geo_b[v] < geo_w[r] for v, r in pairs)
    evidence = "; ".join(f"{v:g}: {geo_b[v]:.3g} vs {geo_w[r]:.3g}"
                         + ("" if r == v else f" (at {r:g})") for v, r in pairs)
    stats = paired_difference(better, worse, pairs)
    verdict = comparison_verdict(wins, len(pairs), stats)
    diagnosis = ""
    if verdict != "supported":
        diagnosis = "; ".join(p for p in (describe, comparison_diagnosis(
            frame, better_label, worse_label, x, stats, regime, n_train)) if p)
    return Claim(name, _line(text, regime), verdict,
                 f"{wins}/{len(pairs)} lower — {evidence}", effect=stats["mean"],
                 effect_low=stats["low"], effect_high=stats["high"],
                 significance=significance_text(stats), diagnosis=diagnosis, **extra)


def comparison_verdict(wins: int, n_pairs: int, stats: dict) -> str:
    """The verdict of "better beats worse" from the count of compared sizes it wins (on
    geometric means over seeds) and the paired effect across seeds (``paired_difference``):

    * *supported*: it wins at every size and the paired interval of mean Δ ln error lies
      below 0;
    * *not supported*: it wins at no size and the interval lies above 0;
    * *inconclusive*: it wins at every size (or at none) but the interval contains 0 — the
      seeds do not separate the models (VERDICTS.md: a comparison is decided paired across
      seeds);
    * *mixed*: it wins at some sizes only.

    With a single seed (no interval) the count alone decides, and the significance text says
    there is no interval.

    Arguments:
        wins, n_pairs: sizes won and compared (0 ≤ wins ≤ n_pairs, n_pairs ≥ 1).
        stats: ``paired_difference``'s dict ("low", "high").

    Returns:
        "supported", "not supported", "inconclusive" or "mixed".

    Raises:
        ValueError: counts out of range.
    """
    wins, n_pairs = check_int(wins, "wins", 0), check_int(n_pairs, "n_pairs", 1)
    if wins > n_pairs:
        raise ValueError(f"need 0 <= wins <= n_pairs and n_pairs >= 1, got wins={wins}, "
                         f"n_pairs={n_pairs}")
    if 0 < wins < n_pairs:
        return "mixed"
    low, high = stats.get("low", np.nan), stats.get("high", np.nan)
    if not (np.isfinite(low) and np.isfinite(high)):
        return "supported" if wins == n_pairs else "not supported"
    if wins == n_pairs:
        return "supported" if high < 0 else "inconclusive"
    return "not supported" if low > 0 else "inconclusive"
