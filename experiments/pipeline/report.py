"""Tables and reports: our numbers beside the paper's, the fits, and the claims of
``experiments.analysis.claims`` (Baykal et al. 2022, §5.2; the routers' papers; Theorem 4.1's
exponent) with their verdicts, significance, diagnoses and sources. Claims are judged on the
run as it is; the set-up is never tuned until a claim passes."""

from __future__ import annotations

import pathlib
import re

import numpy as np
import pandas as pd

from experiments.analysis.claims import ALPHA, CLAIM_COLUMNS, CONTROL_DEFECTS, CONTROL_ROLES, NUMERIC_CLAIM_COLUMNS, SESOI, Claim, control_status
from experiments.papers.baykal_tables import PAPER_TABLE1, PAPER_TABLE2, paper_table2_anomalies
from experiments.papers.scaling_claims import claims_for, sizes_text
from experiments.analysis.tables import markdown_cell
from experiments.analysis.plots import plot_experiment, with_size
from experiments.analysis.scaling import error_column, scaling_table
from experiments.analysis.fits import experiment_fits, panel_window
from experiments.runner.specs import ExperimentConfig


def _fits(frame: pd.DataFrame, default: str) -> str:
    """'exact', or e.g. 'exact (dense, DSM), adam (COMET, …)' when models were fitted differently."""
    if "fit" not in frame or frame["fit"].nunique() <= 1:
        return default
    return ", ".join(f"{fit} ({', '.join(pd.unique(rows['model_label']))})"
                     for fit, rows in frame.groupby("fit", sort=False))


def _fmt(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.3g}"


def mixed_size_labels(frame: pd.DataFrame, x: str) -> list[str]:
    """Model labels of ``frame`` (with column ``size``, see ``with_size``) that have rows of
    different sizes at one value of ``x`` in one target: a pivot by ``x`` would average
    different models together (the LSH models: one activated bucket at every bucket count).

    Raises:
        ValueError: ``x`` is not a column of ``frame``.
    """
    from experiments.analysis.tables import check_column

    check_column(frame, x, "x")
    if "size" not in frame:
        return []
    keys = ["target", "model_label", x] if "target" in frame else ["model_label", x]
    sizes = frame.dropna(subset=[x]).groupby(keys, sort=False)["size"].nunique()
    return list(pd.unique(sizes[sizes > 1].index.get_level_values("model_label")))


def summary_table(frame: pd.DataFrame, index: str, columns: str,
                  value: str | None = None) -> pd.DataFrame:
    """Geometric mean over seeds of ``value`` (default ``error_column(frame)``: eval_nmse
    where the rows carry it, else eval_mse), with its standard deviation and the seed count,
    in a pivot table.

    Raises:
        ValueError: a cell would average models of different sizes (``mixed_size_labels``
            names them; leave them out or pivot them by ``size``); ``index``, ``columns`` or
            ``value`` not a column of ``frame``.
    """
    from experiments.analysis.tables import check_column

    check_column(frame, index, "index")
    check_column(frame, columns, "columns")
    if value is not None:
        check_column(frame, value, "value")
    x = columns if index == "model_label" else index
    mixed = mixed_size_labels(frame, x) if {"model_label", x} <= {index, columns} else []
    if mixed:
        raise ValueError(f"frame: models {mixed} have several sizes at one {x}: a pivot by {x} "
                         f"would average them; pivot them by size")
    value = error_column(frame) if value is None else value
    stats = frame.groupby([index, columns])[value].agg(
        lambda v: f"{np.exp(np.mean(np.log(v))):.3g} (±{np.std(v):.1g}, n={len(v)})")
    table = stats.unstack(columns).fillna("")  # a blank cell: no such model in the run
    if index == "model_label":  # keep the experiment's model order (k=8, 16, …, not lexical)
        table = table.reindex([label for label in pd.unique(frame[index]) if label in table.index])
    return table


def target_variances(frame: pd.DataFrame) -> pd.Series:
    """Var(y_eval) of each target, recovered from its rows as eval_mse / eval_nmse (every row
    of a seed shares the seed's evaluation labels): the median over a seed's rows, then the
    mean over seeds. Indexed by target label; empty without ``eval_nmse``. Units: the labels'
    unit squared."""
    if "eval_nmse" not in frame or "target" not in frame:
        return pd.Series(dtype=float)
    rows = frame[(frame["eval_nmse"] > 0) & (frame["eval_mse"] > 0)]
    ratio = rows.assign(var=rows["eval_mse"] / rows["eval_nmse"])
    return ratio.groupby(["target", "seed"], sort=False)["var"].median() \
        .groupby("target", sort=False).mean()


def _variance_lines(frame: pd.DataFrame) -> list[str]:
    """Each target's Var(y_eval) and why the absolute MSEs are not the paper's."""
    if error_column(frame) != "eval_nmse":
        return ["Errors are raw eval MSEs: these rows predate the normalised error eval_nmse "
                "(resuming the sweep fills it).", ""]
    variances = target_variances(frame)
    shown = "; ".join(f"{target}: {value:.3g}" for target, value in variances.items())
    return [f"Errors are nMSE = eval MSE / Var(y_eval) (1 = predicting the mean). Var(y_eval), "
            f"population variance of the evaluation labels, mean over seeds: {shown}. Absolute "
            f"MSEs differ from the paper's because they scale with Var(y), which the targets' "
            f"normalisation sets (ours: Σ|c|·degree = 1 for the polynomial, §5.1; the paper "
            f"does not state its targets' variance); compare nMSEs, not MSEs.", ""]


def _by_fit(frame: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """(heading suffix, rows) per training regime: one group, suffix "", when the rows carry
    one fit value or none (a pivot never averages two regimes of one model together)."""
    if "fit" not in frame or frame["fit"].nunique() <= 1:
        return [("", frame)]
    return [(f", fit = {fit}", rows) for fit, rows in frame.groupby("fit", sort=False)]


def _width_of(key: str) -> float:
    match = re.search(r"bucket_width=([0-9.eE+-]+)", str(key))
    return float(match.group(1)) if match else float("nan")


def subspace_table(rows: pd.DataFrame, config: ExperimentConfig) -> pd.DataFrame:
    """One row per bucket width of a subspace config: the geometric mean of T and of the error
    over seeds, the mean geometry of the window rule (``experiments.papers.subspace_sweep``) and how many
    seeds' rows lie in the fit window (``experiments.analysis.fits.panel_window``)."""
    from experiments.analysis.fit_window import GEOMETRY_COLUMNS

    y = error_column(rows)
    spec = config.panels["a"]
    inside, _ = panel_window(config, spec, rows)
    rows = rows.assign(bucket_width=rows["model_key"].map(_width_of),
                       in_window=rows.index.isin(inside.index))
    aggregations = {"T": ("buckets", lambda v: float(np.exp(np.mean(np.log(v))))),
                    y: (y, lambda v: float(np.exp(np.mean(np.log(v)))))}
    aggregations.update({c: (c, "mean") for c in GEOMETRY_COLUMNS if c in rows})
    aggregations["seeds_in_window"] = ("in_window", "sum")
    table = rows.groupby("bucket_width").agg(**aggregations).sort_index(ascending=False)
    return table.reset_index()


def experiment_markdown(name: str, frame: pd.DataFrame, configs: list[ExperimentConfig],
                        claims: list[Claim], fits: pd.DataFrame | None = None) -> str:
    """A Markdown section: the run's sizes against the paper's, each target's variance,
    results table(s) per training regime, the paper's numbers where it has them (and the
    anomalies of its Table 2), the fitted scaling exponents, the offset-law fits of ``fits``
    (``experiments.analysis.fits.experiment_fits``) when given, and the claims with their verdict,
    evidence, significance and, when not supported, diagnosis. A subspace frame needs the
    ``experiments.analysis.fit_window.GEOMETRY_COLUMNS`` (``with_geometry``).

    Raises:
        ValueError: ``name`` not a non-empty string; ``configs`` empty (the run's sizes come
            from its configs); a ``frame`` whose models have several sizes at one x of a
            results table (table1: flops_paper; table2: width; see ``summary_table``).
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"name must be the experiment's name, got {name!r}")
    if not configs:
        raise ValueError("configs must hold the run's ExperimentConfigs (at least one)")
    frame = with_size(frame)
    if any("window_rule" in s for c in configs for s in c.panels.values()) \
            and "spread_ratio" not in frame:
        from experiments.papers.subspace_sweep import with_geometry

        frame = with_geometry(frame, configs)
    what = "eval nMSE" if error_column(frame) == "eval_nmse" else "eval MSE"
    lines = [f"## {name}", "", f"Target: {', '.join(sorted({c.target.label() for c in configs}))}; "
             f"fit: {_fits(frame, configs[0].fit)}; seeds: {list(configs[0].seeds)}"
             + (f" (and {len(configs[0].control_seeds)} control seeds of the reference model, "
                f"for the controls)" if configs[0].control_seeds else "") + "; n_train = "
             f"{configs[0].n_train}, n_eval = {configs[0].n_eval}; preset: "
             f"{configs[0].preset}.", "",
             f"Sizes: {sizes_text(name, configs)}.", ""]
    lines += control_lines(claims)
    lines += _variance_lines(frame)
    if name == "table1":
        for suffix, rows in _by_fit(frame):
            ours = summary_table(rows, "flops_paper", "model_label")
            lines += [f"Ours ({what}, geometric mean over seeds{suffix}):", "",
                      ours.to_markdown(), ""]
        lines += ["Baykal et al. 2022, Table 1 (MSE):", "",
                  PAPER_TABLE1.to_markdown(index=False), ""]
    elif name == "table2":
        for suffix, rows in _by_fit(frame):
            ours = summary_table(rows, "model_label", "width")
            lines += [f"Ours ({what}{suffix}):", "", ours.to_markdown(), ""]
        lines += ["Baykal et al. 2022, Table 2:", "", PAPER_TABLE2.to_markdown(), ""]
        lines += ["Anomalies of the paper's Table 2: " + "; ".join(paper_table2_anomalies())
                  + ".", ""]
    elif name == "subspace":
        for config in configs:
            rows = frame[(frame["target"] == config.target.label())
                         & (frame["model_label"] == "LSH table")]
            if rows.empty:
                continue
            lines += [f"k = {config.target.subspace_k}, target {config.target.label()}: per "
                      f"bucket width, T and {what} (geometric means over seeds), the window "
                      f"rule's geometry (means) and the seeds in the fit window:", "",
                      subspace_table(rows, config).to_markdown(index=False, floatfmt=".4g"),
                      ""]
    else:
        x = configs[0].panels.get("a", {}).get("x", "activated_units")
        x = x if x in frame else "activated_units"
        for (target, rows_t) in frame.groupby("target", sort=False):
            for suffix, rows in _by_fit(rows_t):
                # Models whose x does not tell their sizes apart (LSH: one activated bucket at
                # every bucket count) are tabled by size instead, beside dense (its width), as
                # in the plots' LSH panels; a pivot never averages different model sizes.
                by_size = mixed_size_labels(rows, x)
                table = summary_table(rows[~rows["model_label"].isin(by_size)], "model_label",
                                      x)
                lines += [f"{what[0].upper()}{what[1:]} by model and {x}, target {target}"
                          f"{suffix}:", "", table.to_markdown(), ""]
                if by_size and x != "size":
                    sized = rows[rows["model_label"].isin(["dense", *by_size])]
                    lines += [f"{what[0].upper()}{what[1:]} by model and size (buckets for "
                              f"{', '.join(by_size)}, width for dense), target {target}"
                              f"{suffix}:", "",
                              summary_table(sized, "model_label", "size").rename(
                                  columns=lambda v: f"{v:g}").to_markdown(), ""]
    laws = []
    for config in configs:
        for spec in config.panels.values():
            rows, _ = panel_window(config, spec, frame[frame["target"] == config.target.label()])
            for suffix, fit_rows in _by_fit(rows):
                law = scaling_table(fit_rows, spec["x"], spec["models"], n_boot=500,
                                    y=error_column(frame))
                if not law.empty:
                    laws.append(law.assign(target=config.target.label(), fit=suffix[8:],
                                           theory_alpha=spec.get("theory_alpha")))
    if laws:
        laws = pd.concat(laws).drop_duplicates(["target", "fit", "model_label", "x"])
        columns = ["target", *(["fit"] if (laws["fit"] != "").any() else []), "model_label",
                   "x", "alpha", "alpha_low", "alpha_high", "theory_alpha"]
        lines += [f"Fitted scaling laws {what} ≈ C·N^(−α) inside each panel's fit window (95 % "
                  f"bootstrap interval over seeds):", "",
                  laws[columns].to_markdown(index=False, floatfmt=".3f"), ""]
    offset = fits[fits["law"] == "offset"] if fits is not None and len(fits) else None
    if offset is not None and len(offset):
        table = offset.assign(
            E=[f"{e:.3g} [{lo:.3g}, {hi:.3g}]" for e, lo, hi in
               offset[["E", "E_low", "E_high"]].to_numpy()],
            alpha=[f"{a:.3f} [{lo:.3f}, {hi:.3f}]" for a, lo, hi in
                   offset[["alpha", "alpha_low", "alpha_high"]].to_numpy()])
        lines += [f"Offset law {what} ≈ E + A·N^(−α), Huber loss on log residuals (95 % "
                  f"bootstrap interval over seeds and points; extrapolation error: relative "
                  f"error at the largest N of the fit without it; every fit in fits.csv):", "",
                  table[["target", "model_label", "x", "E", "alpha", "extrapolation_error",
                         "n_points", "window"]].drop_duplicates(
                      ["target", "model_label", "x"]).to_markdown(index=False,
                                                                   floatfmt=".3g"), ""]
    usage = frame.dropna(subset=["dead_fraction"]) if "dead_fraction" in frame else frame[:0]
    if len(usage):
        table = usage.groupby(["target", "model_label", "activated_units"], sort=False).agg(
            dead_fraction=("dead_fraction", "mean"), usage_cv=("usage_cv", "mean"),
            **{error_column(usage): (error_column(usage),
                                     lambda v: float(np.exp(np.mean(np.log(v)))))}).reset_index()
        lines += ["Utilisation on the evaluation set (mean over seeds): dead_fraction = share "
                  "of units (experts, neurons or PKM values) no evaluation input activates; "
                  "usage_cv = coefficient of variation of per-unit usage (0 = balanced):", "",
                  table.to_markdown(index=False, floatfmt=".3g"), ""]
    lines += _cost_formula_lines(frame)
    if claims:
        table = pd.DataFrame([{c: getattr(claim, c) for c in CLAIM_COLUMNS}
                              for claim in claims], columns=CLAIM_COLUMNS)
        lines += claims_table_lines(table, with_experiment=False)
    return "\n".join(lines).rstrip("\n") + "\n"


#: The verdicts the overview counts, in its column order.
OVERVIEW_VERDICTS = ("supported", "not supported", "underpowered", "inconclusive",
                     "inconclusive (no seed noise measured)", "mixed", "out of reach",
                     "not tested")


def _number(value) -> float:
    """A claims.csv number (read back as text by old readers) as a float; nan for none."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def _p_text(value) -> str:
    value = _number(value)
    return "" if not np.isfinite(value) else f"{value:.2g}" if value >= 1e-3 else f"{value:.1e}"


def claims_table_lines(table: pd.DataFrame, with_experiment: bool = True) -> list[str]:
    """The long claim table: the controls first, then every claim with its regime, source,
    verdict, SESOI, MDE, raw and Holm-adjusted p, test, significance and — when not
    *supported* — its diagnosis.

    Arguments:
        table: claims rows with the ``CLAIM_COLUMNS`` (missing ones read as empty).
        with_experiment: lead each row with the experiment's name (the report's summary).

    Returns:
        Markdown lines (a header line, the table and a blank line).
    """
    cell = markdown_cell
    table = table.copy()
    for column in CLAIM_COLUMNS:
        if column not in table:
            table[column] = np.nan if column in NUMERIC_CLAIM_COLUMNS else ""
    roles = table["role"].astype(str).replace({"": "claim", "nan": "claim"})
    order = roles.map(lambda r: 0 if r in CONTROL_ROLES else 1)
    table = table.assign(role=roles, _order=order).sort_values("_order", kind="stable")
    head = (["experiment"] if with_experiment else []) + [
        "role", "claim", "kind", "quote", "axis", "quantifier", "regime", "source",
        "verdict", "SESOI", "MDE", "p", "p (Holm)",
        "test", "significance", "diagnosis (when not supported)"]
    lines = [f"Claims and controls (rules: experiments/analysis/claims/; α = {ALPHA:g} family-wise, "
             f"Holm over each experiment's claims; controls decided alone at α):", "",
             "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for c in table.itertuples(index=False):
        verdict = str(c.verdict)
        values = ([cell(c.experiment)] if with_experiment else []) + [
            cell(c.role), cell(c.claim), cell(c.kind), cell(_quoted(c.quote)), cell(c.axis),
            cell(c.quantifier), cell(c.regime), cell(c.source), f"**{verdict}**",
            _fmt(_number(c.sesoi)), _fmt(_number(c.mde)), _p_text(c.p_value),
            _p_text(c.p_adjusted), cell(c.test), cell(c.significance),
            "" if verdict == "supported" else cell(c.diagnosis)]
        lines.append("| " + " | ".join(values) + " |")
    return lines + [""]


def _quoted(quote) -> str:
    """A record's quote in quotation marks; "" for none (our own question)."""
    quote = "" if quote is None or (isinstance(quote, float) and np.isnan(quote)) else str(quote)
    return f"“{quote}”" if quote else ""


def control_lines(claims: list[Claim]) -> list[str]:
    """The experiment's controls in one line each, for the top of its section: role, status
    (``control_status``), verdict and the paired effect; nothing without controls."""
    lines = []
    for c in claims:
        if c.role in CONTROL_ROLES:
            lines.append(f"- {c.role} — **{control_status(c.role, c.verdict)}** "
                         f"({c.verdict}): {markdown_cell(c.claim)}; {markdown_cell(c.evidence)}; "
                         f"{markdown_cell(c.significance)}")
    return ["Controls (decided by the claims' rule; a control that failed, or a negative "
            "control that could not fail, makes this experiment's verdicts unreliable):", "",
            *lines, ""] if lines else []


def claims_overview(table: pd.DataFrame) -> list[str]:
    """One screen per run: per experiment, the count of each verdict over its claims, the
    status of its negative and positive controls (``control_status``), the number of claims
    and of those tested by a p-value (the Holm family), the family-wise level, and
    "unreliable" where a control failed or could not fail.

    Arguments:
        table: claims rows of every experiment with the ``CLAIM_COLUMNS`` (``role`` missing
            or empty: a claim).

    Returns:
        Markdown lines.
    """
    if table.empty:
        return []
    roles = (table["role"].astype(str).replace({"": "claim", "nan": "claim"})
             if "role" in table else pd.Series("claim", index=table.index))
    table = table.assign(role=roles)
    rows = []
    unreliable = []
    for name, group in table.groupby("experiment", sort=False):
        claims = group[group["role"] == "claim"]
        counts = claims["verdict"].astype(str).value_counts()
        kinds = (claims["kind"].astype(str) if "kind" in claims
                 else pd.Series("", index=claims.index))
        row = {"experiment": name, "claims": len(claims),
               "papers' claims": int((kinds == "paper").sum()),
               "derived": int((kinds == "derived").sum()),
               "ours": int((kinds == "ours").sum()),
               "tested (Holm family)": int(claims["p_value"].map(_number).notna().sum())
               if "p_value" in claims else 0}
        row.update({v: int(counts.get(v, 0)) for v in OVERVIEW_VERDICTS})
        other = int(counts.drop(list(OVERVIEW_VERDICTS), errors="ignore").sum())
        if other:
            row["other"] = other
        statuses = {}
        for role in CONTROL_ROLES:
            mine = group[group["role"] == role]
            statuses[role] = ", ".join(control_status(role, v) for v in mine["verdict"]) \
                if len(mine) else "none"
            row[role] = statuses[role]
        defects = [d for d in CONTROL_DEFECTS if any(d in t for t in statuses.values())]
        reasons = {"FAILED": "a control failed", "COULD NOT FAIL": "a control could not fail"}
        row["reliable"] = (f"UNRELIABLE ({'; '.join(reasons[d] for d in defects)})"
                           if defects else "yes")
        if defects:
            unreliable.append(f"{name} ({'; '.join(reasons[d] for d in defects)})")
        row["family-wise level"] = f"Holm α = {ALPHA:g}"
        rows.append(row)
    frame = pd.DataFrame(rows).fillna(0)
    frame = frame.loc[:, [c for c in frame.columns
                          if not (c in OVERVIEW_VERDICTS and (frame[c] == 0).all())]]
    lines = ["## Claims at a glance", "",
             f"Per experiment: verdict counts over its claims (controls apart), its controls "
             f"(negative: the reference model against itself on a split of the seeds, must not "
             f"read supported and must be able to — MDE ≤ SESOI —, else COULD NOT FAIL; "
             f"positive: the reference at x against x/4, or continual learning's "
             f"joint-training oracle against it, must read supported), and its family-wise "
             f"level (Holm over the claims with a p-value). "
             f"*supported* needs the Holm-adjusted p ≤ {ALPHA:g}, the effect in the claimed "
             f"direction and the MDE (power 0.8 at the run's seeds) ≤ the pre-registered "
             f"SESOI; *underpowered*: MDE > SESOI; *inconclusive (no seed noise measured)*: "
             f"< 2 seeds or sd = 0. Claims in all: {int((table['role'] == 'claim').sum())}"
             + _kind_counts(table) + ".",
             "", frame.to_markdown(index=False), "",
             "Smallest effects of interest, fixed before the run (claims of one family share "
             "one): " + "; ".join(f"{s.name} = {s.value:.3g} {s.unit} ({s.reason})"
                                  for s in SESOI.values()) + ".", ""]
    if unreliable:
        lines += [f"Unreliable (a control failed or could not fail, so their verdicts are "
                  f"unchecked): {', '.join(unreliable)}.", ""]
    return lines


def _kind_counts(table: pd.DataFrame) -> str:
    """The claims (controls apart) counted by kind: the papers' own, derived, ours, with the
    papers' verdicts counted apart from ours."""
    if "kind" not in table:
        return ""
    claims = table[table["role"] == "claim"]
    parts = []
    for kind, word in (("paper", "the papers' claims"), ("derived", "derived from the papers"),
                       ("ours", "our own questions")):
        mine = claims[claims["kind"].astype(str) == kind]
        counts = mine["verdict"].astype(str).value_counts()
        parts.append(f"{word} {len(mine)}" + (" (" + ", ".join(
            f"{v} {n}" for v, n in counts.items()) + ")" if len(mine) else ""))
    return " — " + "; ".join(parts)


def claims_section(table: pd.DataFrame) -> list[str]:
    """The report's claims: the one-screen overview (``claims_overview``), then the long
    table (``claims_table_lines``)."""
    if table.empty:
        return []
    return claims_overview(table) + ["## Claims and what this run says", "",
                                     *claims_table_lines(table)]


def image_data_lines(out, written: dict) -> list[str]:
    """The data of every image experiment of a ``sparselab reproduce`` folder, one line each
    (``experiments.papers.real_data.data_of`` of the folder holding its ``config.json``: name,
    source — package and version, or folder and file hashes — train/test sizes, image
    shape, split and the arrays' sha256), for the top of ``report.md``; nothing when no step
    wrote a config.json that names its data (the scaling experiments read no images).

    Arguments:
        out: the reproduce folder.
        written: step name -> its files, relative to ``out`` (``run_reproduce``'s record).

    Returns:
        Markdown lines (a header line, one bullet per image experiment, a blank line).

    Raises:
        TypeError: ``written`` is not a dict.
        ValueError: a step's config.json is not JSON (``data_of``).
    """
    from experiments.papers.real_data import data_of

    if not isinstance(written, dict):
        raise TypeError(f"written must be a dict of step name -> files, got "
                        f"{type(written).__name__}")
    rows = []
    for name, files in written.items():
        for f in files or ():
            if pathlib.PurePath(str(f)).name == "config.json":
                line = data_of((pathlib.Path(out) / str(f)).parent)
                if line:
                    rows.append(f"- `{name}`: {markdown_cell(line)}")
    if not rows:
        return []
    return ["Data of the image experiments (from each one's config.json; the sha256 is part "
            "of its settings fingerprint, so rows made on other data are never reused):", "",
            *rows, ""]


def _cost_formula_lines(frame: pd.DataFrame) -> list[str]:
    """A table of counted FLOPs beside the model's own paper's cost formula (SMEAR §3), for
    the models that report one (``flops_cost_formula``); none when no model does."""
    if "flops_cost_formula" not in frame:
        return []
    rows = frame.dropna(subset=["flops_cost_formula"])
    if rows.empty:
        return []
    # FLOPs do not depend on the target or the seed: one row per model and size
    table = rows.groupby(["model_label", "activated_units", "width"], sort=False).agg(
        flops_true=("flops_true", "first"),
        flops_cost_formula=("flops_cost_formula", "first")).reset_index()
    table = table.astype({c: "int64" for c in table.columns if c != "model_label"})
    table["counted / formula"] = (table["flops_true"] / table["flops_cost_formula"]).round(3)
    table = table.rename(columns={"flops_true": "counted FLOPs (flops_true)",
                                  "flops_cost_formula": "paper's formula (flops_cost_formula)",
                                  "width": "total width"})
    return ["FLOPs per example: counted (multiply-adds × 2 of the layer, routing and merge "
            "included) beside the model's own paper's cost formula (SMEAR: Muqeeth et al. "
            "2024, §3, which charges the merge one FLOP per weight per expert):", "",
            table.to_markdown(index=False), ""]


def write_experiment_outputs(name: str, configs: list[ExperimentConfig], frame: pd.DataFrame,
                             out: pathlib.Path, claims: str | None = None
                             ) -> tuple[list[pathlib.Path], list[Claim]]:
    """Plots (PNG and SVG), ``fits.csv`` (every power- and offset-law fit,
    ``experiments.analysis.fits.experiment_fits``: columns ``FIT_COLUMNS``, the header even when
    nothing can be fitted), ``table.md`` and ``claims.csv`` (columns ``CLAIM_COLUMNS``, the
    header even when the experiment tests no claim) for one experiment. For the subspace
    experiment also ``geometry.csv``: the window rule's input-only quantities per row
    (``experiments.papers.subspace_sweep.bucket_geometry``), computed before any fit; its fits use
    ``experiments.papers.subspace_sweep.SUBSPACE_BOOT`` bootstrap resamples.

    Rows at the configs' control seeds (``experiments.runner.sweep.control_rows``) feed the
    controls alone (``claims_for``); the fits, plots, table and claims use the run's seeds.

    ``claims`` names the experiment whose claims are judged (``claims_for``; an experiment
    from a config file may judge fig2's claims under its own name), "none" for none; None:
    ``name``'s own (none for a name outside ``claims.CLAIM_EXPERIMENTS``). A config without
    panels draws no figure.

    Raises:
        ValueError: a subspace row's bucket count differs from the recomputed one
            (``experiments.papers.subspace_sweep.with_geometry``); ``name`` not a non-empty string.
    """
    if not isinstance(name, str) or not name or "/" in name:
        raise ValueError(f"name must be the experiment's name (a non-empty string without "
                         f"'/'), got {name!r}")
    out = pathlib.Path(out)
    paths = []
    n_boot = None
    if any(c.target.subspace_k is not None for c in configs):
        from experiments.papers.subspace_sweep import SUBSPACE_BOOT, bucket_geometry, with_geometry

        geometry = pd.concat([bucket_geometry(c) for c in configs
                              if c.target.subspace_k is not None])
        geometry_path = out / "geometry.csv"
        geometry.to_csv(geometry_path, index=False)
        paths.append(geometry_path)
        frame = with_geometry(frame, configs, geometry)
        n_boot = SUBSPACE_BOOT
    from experiments.papers.scaling_claims import CLAIM_EXPERIMENTS
    from experiments.runner.sweep import run_rows

    everything, frame = frame, run_rows(frame, configs)  # control seeds: the controls' only
    fits = experiment_fits(name, configs, frame, n_boot=n_boot)

    # None: the experiment's own claims; a name without claims of its own (a config file's
    # experiment) judges none
    claim_set = claims if claims is not None else (
        name if name in CLAIM_EXPERIMENTS else "none")
    claims = [] if claim_set == "none" else claims_for(claim_set, everything, configs,
                                                        fits=fits)
    fits_path = out / "fits.csv"
    fits.to_csv(fits_path, index=False)
    for i, config in enumerate(configs):
        rows = frame[frame["target"] == config.target.label()]
        panels = [(p, spec, rows) for p, spec in config.panels.items()]
        stem = out / (name if len(configs) == 1 else f"{name}_{i}")
        mask = None
        spec = config.panels.get("a", {})
        if "window_rule" in spec or "sample_regime_k" in spec:  # filled: the fit window
            mask = lambda r, c=config, s=spec: r.index.isin(  # noqa: E731
                panel_window(c, s, r)[0].index)
        if panels:  # a config without panels (a hand-written one) draws no figure
            paths += plot_experiment(panels, stem, f"{name}: {config.target.label()}",
                                     fit_mask=mask, config=config)
    table = out / "table.md"
    table.write_text(experiment_markdown(name, frame, configs, claims, fits=fits))
    claims_path = out / "claims.csv"
    # the header always, so that an experiment without claims still gives a valid CSV
    pd.DataFrame([c.__dict__ for c in claims], columns=CLAIM_COLUMNS).to_csv(claims_path,
                                                                             index=False)
    return paths + [fits_path, table, claims_path], claims
