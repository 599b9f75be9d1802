"""A claim "A has lower error than B" and its paired statistics across seeds, verdict and
diagnosis (``experiments.analysis.claims``)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields, replace

import numpy as np
import pandas as pd

from experiments.analysis.claims._rules import ALPHA, NO_NOISE, SESOI, Rule
from experiments.analysis.tables import check_column, check_label
from experiments.analysis.scaling import error_column
from routing.validation import check_choice, check_int, check_real, check_points

#: Two-sided level of every paired interval.
LEVEL = 0.95


#: The regimes, as claim lines name them.
REGIME_TEXT = {"exact": "exact least-squares top layer", "adam": "top layer trained with Adam",
               "end_to_end": "trained end to end (Adam; plain SGD for SDMLP)", "": ""}


@dataclass(frozen=True)
class Claim:
    """A claim of a paper and what our run says about it.

    Attributes:
        experiment: experiment name.
        claim: the claim in words, with its source and regime.
        verdict: "supported", "not supported", "underpowered", "inconclusive", "inconclusive
            (no seed noise measured)", "mixed", "out of reach" or "not tested"
            (``experiments.analysis.claims._rules``).
        evidence: the comparison behind the verdict (numbers are nMSEs, or MSEs for rows
            without ``eval_nmse``).
        regime: the rows' ``fit`` ("exact", "adam", "end_to_end"; "" when the rows carry
            none).
        source: paper and section the claim comes from.
        effect: the effect size (comparisons: mean paired Δ ln nMSE, < 0 where the first model
            is better; subspace: α − 2/k; Table 2: ln(DSM / dense) of the deciding
            configuration).
        effect_low, effect_high: its 95 % interval (nan without one).
        significance: the test, effect and interval, p-values, SESOI and MDE in words.
        diagnosis: when the verdict is not *supported*: what the data say carries the gap.
        sizes: the run's sizes against the paper's.
        role: "claim", "negative control" or "positive control" (controls stay outside the
            family-wise adjustment and are decided at ``ALPHA``).
        sesoi: the claim family's pre-registered smallest effect of interest (equivalences:
            the band's half-width), in the effect's unit.
        mde: the minimal detectable effect at power 0.8 with the run's seeds (inf when the
            test cannot reach ``ALPHA`` at all; nan without seed noise).
        p_value, p_adjusted: the claim's p-value and its Holm-adjusted value within the
            experiment (nan when not tested by a p-value).
        test: the rule that decided ("paired t on cluster means", "sign-flip (exact)", "TOST
            …", "exponent band", …).
        quote: the paper's own short phrase (or a paraphrase, or "" for our own question),
            from the claim's record (``experiments.analysis.claims._records``).
        kind: "paper" (the paper's claim), "derived" (derived by us from the paper's words) or
            "ours" (our own question; the controls).
        axis: what is held equal between the compared models.
        quantifier: over which sizes the claim speaks.
        record: the key of the claim's record (``_records.RECORDS``; "unrecorded" if none).
        rule: how the verdict is redone on an adjusted p-value (``_rules.Rule``); not a
            ``claims.csv`` column.

    The record is looked up from ``experiment`` and ``claim`` when ``record`` is empty
    (``_records.record_for``); it sets quote, kind, axis, quantifier and, when it names one,
    the source.
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
    role: str = "claim"
    sesoi: float = float("nan")
    mde: float = float("nan")
    p_value: float = float("nan")
    p_adjusted: float = float("nan")
    test: str = ""
    quote: str = ""
    kind: str = ""
    axis: str = ""
    quantifier: str = ""
    record: str = ""
    rule: object = field(default=None, repr=False, compare=False, metadata={"csv": False})

    def __post_init__(self):
        if self.record:
            return
        from experiments.analysis.claims._records import record_for

        found = record_for(str(self.experiment), str(self.claim))
        for name, value in (("quote", found.quote), ("kind", found.kind),
                            ("axis", found.axis), ("quantifier", found.quantifier),
                            ("record", found.key), ("source", found.source or self.source)):
            object.__setattr__(self, name, value)


#: The columns of ``claims.csv``: every field of ``Claim`` but its rule.
CLAIM_COLUMNS = [f.name for f in fields(Claim) if f.metadata.get("csv", True)]

#: The numeric ones.
NUMERIC_CLAIM_COLUMNS = ("effect", "effect_low", "effect_high", "sesoi", "mde", "p_value",
                         "p_adjusted")


#: The regimes (``fit`` values) a diagnosis speaks of; "" for rows without one.
REGIMES = ("exact", "adam", "end_to_end", "")


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
    check_label(label, "label")
    check_column(frame, x, "x")
    y = error_column(frame) if y is None else check_column(frame, y, "y")
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

    Computed by ``inference.intervals.t_interval``.

    Raises:
        ValueError: ``values`` is not a 1-D real array or holds NaN/inf (a missing value is
            dropped by the caller, never here: a NaN would silently shrink the sample);
            ``level`` outside (0, 1).
    """
    from inference import t_interval as student_t_interval

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
    with np.errstate(over="ignore", invalid="ignore"):
        interval = student_t_interval(values, level) if np.isfinite(mean) else None
    if interval is None or not (np.isfinite(interval.low) and np.isfinite(interval.high)):
        raise ValueError("values are too large: their mean or spread overflows float64 "
                         f"(largest |value| {np.abs(values).max():.3g})")
    return mean, float(interval.low), float(interval.high)


def _one_sample(d: np.ndarray) -> dict:
    """n, mean, t interval (``t_interval``) and two-sided t-test p-value of the finite
    entries of ``d`` (p nan with n < 2 or no spread)."""
    from scipy import stats as scipy_stats

    d = d[np.isfinite(d)]
    mean, low, high = t_interval(d)
    p = (float(scipy_stats.ttest_1samp(d, 0.0).pvalue)
         if len(d) >= 2 and d.std(ddof=1) > 1e-12 * max(1.0, abs(mean)) else np.nan)
    return {"n": len(d), "mean": mean, "low": low, "high": high, "p": p}


def _one_samples(d: np.ndarray) -> list[dict]:
    """``_one_sample`` of each row of ``d`` (pairs, seeds; nan: not measured); one vectorised
    ``scipy.stats.ttest_1samp`` when every entry is finite (the usual case)."""
    from scipy import stats as scipy_stats

    if d.shape[1] < 2 or not np.isfinite(d).all():
        return [_one_sample(row) for row in d]
    table = d.T  # (seeds, pairs)
    mean = table.mean(axis=0)
    spread = table.std(axis=0, ddof=1) > 1e-12 * np.maximum(1.0, np.abs(mean))
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        # rows without spread warn of precision loss; their p is set to nan below
        warnings.simplefilter("ignore", RuntimeWarning)
        result = scipy_stats.ttest_1samp(table, 0.0, axis=0)
        interval = result.confidence_interval(LEVEL)
    low = np.where(spread, interval.low, mean)  # no spread: a zero-width interval, as t_interval
    high = np.where(spread, interval.high, mean)
    return [{"n": len(table), "mean": float(mean[j]), "low": float(low[j]),
             "high": float(high[j]), "p": float(result.pvalue[j]) if spread[j] else np.nan}
            for j in range(table.shape[1])]


def paired_difference(better: pd.DataFrame, worse: pd.DataFrame,
                      pairs: list[tuple[float, float]]) -> dict:
    """The paired effect of ``better`` against ``worse`` over ``pairs`` of (x, x of worse),
    tested once over all (pair, seed) differences d = ln e_better(x, s) − ln e_worse(x', s)
    (``inference.paired_test``: strata the pairs, clusters the seeds present at every pair):
    per seed, Δ_s = mean of d over pairs; the mean over seeds with its t interval; the
    p-value of the chosen test; the minimal detectable effect (``inference``'s power 0.8 at
    ``ALPHA`` from the sd of Δ_s; inf when the test cannot reach ``ALPHA`` with these
    seeds); and per pair the paired t test over that pair's common seeds, Holm-adjusted
    across pairs (``significant``), with ``mixed`` when one pair is significantly lower and
    another significantly higher.

    Arguments:
        better, worse: ``seed_log_errors`` tables (any value tables indexed by x with one
            column per seed).
        pairs: [(x, x')] with x in better's index and x' in worse's.

    Returns:
        {"mean", "low", "high", "sd", "p_value", "mde", "min_p_value", "normality_p": floats
        (nan without seed noise: fewer than 2 seeds or sd = 0); "n_seeds": int; "test": str;
        "seed_values": the per-seed Δ_s, float64 (n_seeds,);
        "mixed": bool; "per_x": DataFrame with x, ref, n, mean, low, high, p, p_adjusted,
        significant}.

    Raises:
        ValueError: ``pairs`` not a list of (x, x') pairs, or a pair not in the tables.

    Source: Student 1908; Fisher 1935 §21; Holm 1979.
    """
    from inference import holm, minimal_detectable_effect, paired_test

    try:
        pairs = [(x, ref) for x, ref in pairs]
    except (TypeError, ValueError):
        raise ValueError(f"pairs must be a list of (x, x of worse) pairs, got {pairs!r}") \
            from None
    missing = [p for p in pairs if p[0] not in better.index or p[1] not in worse.index]
    if missing:
        raise ValueError(f"pairs {missing} are not in the tables (better: "
                         f"{list(better.index)}, worse: {list(worse.index)})")
    seeds = better.columns.union(worse.columns)
    b_values = better.reindex(columns=seeds).to_numpy(float)
    w_values = worse.reindex(columns=seeds).to_numpy(float)
    d = np.array([b_values[better.index.get_loc(x)] - w_values[worse.index.get_loc(ref)]
                  for x, ref in pairs]).reshape(len(pairs), len(seeds))  # (pairs, seeds)
    per_x = pd.DataFrame([{"x": x, "ref": ref, **t} for (x, ref), t in
                          zip(pairs, _one_samples(d))],
                         columns=["x", "ref", "n", "mean", "low", "high", "p"])
    p_x = per_x["p"].to_numpy(float)
    per_x["p_adjusted"] = holm(p_x, ALPHA).p_adjusted if np.isfinite(p_x).sum() > 1 else p_x
    per_x["significant"] = per_x["p_adjusted"].to_numpy(float) <= ALPHA  # nan → False
    complete = d[:, np.isfinite(d).all(axis=0)].T  # (seeds present at every pair, pairs)
    nan = float("nan")
    result = {"mean": nan, "low": nan, "high": nan, "sd": nan, "p_value": nan, "mde": nan,
              "min_p_value": nan, "normality_p": nan, "n_seeds": len(complete),
              "test": "none (no common seed)", "per_x": per_x, "seed_values": np.array([]),
              "mixed": bool((per_x["significant"] & (per_x["mean"] < 0)).any()
                            and (per_x["significant"] & (per_x["mean"] > 0)).any())}
    if len(complete):
        values = complete  # (seeds, pairs)
        strata = np.tile(np.arange(values.shape[1]), values.shape[0])
        clusters = np.repeat(np.arange(values.shape[0]), values.shape[1])
        test = paired_test(values.ravel(), strata, clusters)
        result["seed_values"] = values.mean(axis=1)
        result.update(mean=test.mean, low=test.low, high=test.high, sd=test.sd,
                      p_value=test.p_value, min_p_value=test.min_p_value,
                      normality_p=test.normality_p, test=test.test)
        if np.isfinite(test.p_value):
            result["mde"] = (float("inf") if test.min_p_value > ALPHA else
                             minimal_detectable_effect(test.sd, test.n, ALPHA))
    return result


def significance_text(stats: dict, what: str = "nMSE") -> str:
    """The paired effect in words: mean Δ ln error over seeds with its interval, the ratio it
    means, the test and its raw p-value, the MDE, and how many compared x are significant
    after Holm across x (``paired_difference``'s dict)."""
    if not np.isfinite(stats["mean"]):
        return "no seed common to both models: no paired comparison"
    per_x = stats["per_x"]
    text = (f"paired over {stats['n_seeds']} seed{'s' if stats['n_seeds'] != 1 else ''}: "
            f"mean Δ ln {what} = {stats['mean']:+.3f}")
    if np.isfinite(stats.get("p_value", np.nan)):
        text += (f" [{stats['low']:+.3f}, {stats['high']:+.3f}] (t, {LEVEL:.0%}), ratio "
                 f"×{np.exp(stats['mean']):.2f}; {stats['test']}: p = {stats['p_value']:.3g}; "
                 f"MDE {stats['mde']:.3g}; per x, {int(per_x['significant'].sum())}/"
                 f"{len(per_x)} significant (Holm across x)")
    else:
        text += f", ratio ×{np.exp(stats['mean']):.2f}; {NO_NOISE}"
    return text


# -- diagnoses ------------------------------------------------------------------------------

def geometric_mean(rows: pd.DataFrame, column: str) -> float:
    """The geometric mean of ``rows[column]`` over its finite positive values (errors are
    compared on a log scale; Baykal et al. 2022, §5 report MSEs of several seeds).

    Arguments:
        rows: results rows. column: a column of errors (float; a missing column reads as empty).

    Returns:
        float: exp(mean(ln v)) over the finite v > 0; nan when there is none.
    """
    values = rows[column].to_numpy(float) if column in rows else np.array([])
    values = values[np.isfinite(values) & (values > 0)]
    return float(np.exp(np.mean(np.log(values)))) if len(values) else float("nan")


def model_key_fields(key: str) -> dict:
    """The name=value pairs of a results row's ``model_key`` (``ModelSpec.key()``, e.g.
    "lsh;n_bits=8;n_tables=1;family=sign" gives {"n_bits": "8", "n_tables": "1", "family": "sign"}).

    Arguments:
        key: the model key (str).

    Returns:
        dict of str to str (values unparsed); parts without "=" are skipped.

    Raises:
        TypeError: ``key`` is not a string.
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be a model key (a string such as 'dense;width=4'), got "
                        f"{key!r}")
    return dict(part.split("=", 1) for part in key.split(";") if "=" in part)


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
    check_column(frame, x, "x")
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
        a_train, b_train = geometric_mean(mine, "train_nmse"), geometric_mean(theirs, "train_nmse")
        if np.isfinite(a_train) and np.isfinite(b_train):
            a_eval = geometric_mean(mine, error_column(frame))
            b_eval = geometric_mean(theirs, error_column(frame))
            if a_train < b_train:
                cause = ("fits its training data better but evaluates worse: estimation error "
                         "(more parameters than the data pin down"
                         + (f" at n_train = {n_train:,}" if n_train else "") + ")")
            else:
                cause = ("is worse on its training data too: the model class (approximation)"
                         + (" or the optimisation (training budget)" if regime in ("adam", "end_to_end")
                            else "")
                         + " limits it, not the sample")
            parts.append(f"at {x} = {worst['x']:g}, {better_label} train/eval nMSE "
                         f"{a_train:.3g}/{a_eval:.3g} vs {worse_label} {b_train:.3g}/"
                         f"{b_eval:.3g}: it {cause}")
    if regime == "exact":
        parts.append("regime: every frozen-feature top layer solved exactly (least squares), "
                     "so dense gets its best possible top layer; the paper trains its "
                     "synthetic models' top layer (optimiser in its Appendix D, not in our "
                     "copy; it names Adam only for CIFAR-10)")
    elif regime == "adam":
        parts.append("regime: top layer trained with Adam for a fixed budget, the same for "
                     "both models")
    elif regime == "end_to_end":
        parts.append("regime: trained end to end for a fixed number of steps, the same for "
                     "both models")
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
    rows = frame[frame["model_label"] == check_label(label, "label")]
    if rows.empty:
        raise ValueError(f"label {label!r} has no rows in the frame (labels: "
                         f"{', '.join(map(str, pd.unique(frame['model_label'])))})")
    key = model_key_fields(rows["model_key"].iloc[0]) if "model_key" in rows else {}
    family = key.get("family", "sign")
    names = {"sign": "sign hyperplanes through the origin (Charikar)",
             "affine": "affine hyperplanes", "euclidean": "Euclidean LSH with offsets",
             "uniform": "a uniform random hash"}
    tables = key.get("n_tables", "1")
    size = "size" if "size" in rows else "buckets"
    by_size = rows.groupby(size)
    errors = {s: geometric_mean(by_size.get_group(s), error_column(frame)) for s in by_size.groups}
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

def fit_regimes(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The training regimes present in results rows, each with its rows: a claim is judged per
    regime (``REGIMES``: "exact" least squares or Adam).

    Arguments:
        frame: results rows, with a ``fit`` column or without one.

    Returns:
        [(fit value (str), its rows)] in order of appearance; [("", frame)] when the rows
        carry no ``fit`` (or only missing values).
    """
    if "fit" not in frame or frame["fit"].isna().all():
        return [("", frame)]
    return [(str(fit), frame[frame["fit"] == fit]) for fit in pd.unique(frame["fit"].dropna())]


def claim_line(text: str, regime: str) -> str:
    """A claim's text with its training regime named, as ``claims.csv`` writes it: "text
    [regime in words]" (``REGIME_TEXT``), or ``text`` alone when ``regime`` is "".

    Arguments:
        text: the claim's text (str). regime: a ``fit`` value ("exact", "adam", …) or "".

    Returns:
        str.

    Raises:
        TypeError: ``text`` or ``regime`` is not a string.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a claim's text (a string), got {text!r}")
    if not isinstance(regime, str):
        raise TypeError(f"regime must be a fit value such as 'exact' or '' (a string), got "
                        f"{regime!r}")
    return text if not regime else f"{text} [{REGIME_TEXT.get(regime, regime)}]"


def compare(name: str, text: str, frame: pd.DataFrame, better_label: str, worse_label: str,
            x: str, against=None, worse_x: str | None = None, regime: str = "",
            source: str = "", sizes: str = "", n_train: int | None = None,
            describe: str = "") -> Claim:
    """The claim "``better_label`` has lower error than ``worse_label``" over the x of the
    better model (against ``worse_label`` at ``against(x)`` when given; ``worse_x``: the column
    of the worse model's x, default ``x``), decided by one paired test over all (x, seed)
    differences of ln error (``paired_difference``) under ``comparison_verdict`` with the
    SESOI ``SESOI["ln_error"]`` (10 % in nMSE), as a family of one (``adjust_family``
    redoes it within an experiment); when not supported, ``comparison_diagnosis`` (after
    ``describe``, a text about the model).

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
        if check_label(label, param) not in labels:
            raise ValueError(f"{param} {label!r} has no rows in the frame (labels: "
                             f"{', '.join(sorted(map(str, labels)))})")
    check_column(frame, x, "x")
    if worse_x is not None:
        check_column(frame, worse_x, "worse_x")
    check_choice(regime, "regime", REGIMES)
    if n_train is not None:
        n_train = check_int(n_train, "n_train", 1)
    return compare_unchecked(name, text, frame, better_label, worse_label, x, against, worse_x, regime,
                    source, sizes, n_train, describe)


def compare_unchecked(name, text, frame, better_label, worse_label, x, against=None,
                      worse_x=None, regime="", source="", sizes="", n_train=None,
                      describe="") -> Claim:
    """``compare`` without its check that each label has rows: a label without rows gives a
    claim read *not tested* instead of an error (the claims an experiment writes when its run lacks one of
    the models). Arguments, return value and the rule as ``compare``.

    Raises:
        TypeError: a label that is not a string.
        ValueError: ``n_train`` neither None nor an integer >= 1; as ``compare`` for the
            other arguments.
    """
    check_label(better_label, "better_label")
    check_label(worse_label, "worse_label")
    if n_train is not None:
        n_train = check_int(n_train, "n_train", 1)
    better = seed_log_errors(frame, better_label, x)
    worse = seed_log_errors(frame, worse_label, worse_x or x)
    extra = dict(regime=regime, source=source, sizes=sizes)
    pairs = []
    for value in better.index:
        ref = value if against is None else against(value)
        if ref is not None and not worse.empty and ref in worse.index:
            pairs.append((value, ref))
    if not pairs:
        return Claim(name, claim_line(text, regime), "not tested",
                     "no comparable configurations in this run", **extra)
    geo_b, geo_w = np.exp(better.mean(axis=1)), np.exp(worse.mean(axis=1))
    wins = sum(geo_b[v] < geo_w[r] for v, r in pairs)
    evidence = "; ".join(f"{v:g}: {geo_b[v]:.3g} vs {geo_w[r]:.3g}"
                         + ("" if r == v else f" (at {r:g})") for v, r in pairs)
    stats = paired_difference(better, worse, pairs)
    diagnosis = "; ".join(p for p in (describe, comparison_diagnosis(
        frame, better_label, worse_label, x, stats, regime, n_train)) if p)
    return decided(Claim(name, claim_line(text, regime), "", f"{wins}/{len(pairs)} lower — "
                         f"{evidence}", **extra),
                   Rule("comparison", "lower", stats, SESOI["ln_error"], diagnosis=diagnosis))


def decided(claim: Claim, rule: Rule) -> Claim:
    """``claim`` decided by ``rule`` alone (a family of one: p_adjusted = p_value), with its
    effect and interval; ``experiments.analysis.claims.adjust_family`` redoes it within the
    experiment's family."""
    stats = rule.stats
    claim = replace(claim, effect=stats["mean"], effect_low=stats["low"],
                    effect_high=stats["high"], rule=rule)
    return rule.apply(claim, rule.p_value)
