"""Tables, claims and reports: our numbers beside the paper's, and whether our run supports
each qualitative claim of Baykal et al. 2022, §5.2. Claims are judged on the run as it is;
the set-up is never tuned until a claim passes."""

from __future__ import annotations

import pathlib
from dataclasses import dataclass, fields

import numpy as np
import pandas as pd

from experiments.plots import plot_experiment, with_size
from experiments.presets import in_sample_regime
from experiments.scaling import error_column, experiment_fits, scaling_table
from experiments.specs import ExperimentConfig

#: Baykal et al. 2022, Table 1: FLOPs → eval MSE (dense, DSM 50 % sparsity, DSM 25 % sparsity).
PAPER_TABLE1 = pd.DataFrame(
    {"FLOPs": [18432, 36864, 73728], "dense": [0.01015, 0.01009, 0.01046],
     "DSM 50% sparsity": [0.01014, 0.007438, 0.006115],
     "DSM 25% sparsity": [0.009655, 0.005054, 0.001799]})

#: Baykal et al. 2022, Table 2: MSE for the random 3-layer NN target; rows model, columns width.
PAPER_TABLE2 = pd.DataFrame(
    {"model": ["dense", "DSM k=32", "DSM k=64", "DSM k=128", "DSM k=256", "DSM k=512",
               "DSM k=1024"],
     1024: [4.32e-5, 1.3e-4, 1.1e-4, 1e-4, 8.7e-5, 5.8e-5, 6e-5],
     2048: [1.76e-5, 7e-5, 3.1e-5, 4.2e-5, 3.7e-5, 3.8e-5, 2.1e-5],
     4096: [7.4e-6, 2.3e-5, 1.9e-5, 1.5e-5, 1.7e-5, 1.9e-5, 2.2e-5]}).set_index("model")

#: Tolerance of "performs as well as" in the Table 2 claim: best DSM MSE ≤ 1.5 × dense MSE.
AS_WELL_AS = 1.5


@dataclass(frozen=True)
class Claim:
    """A qualitative claim of §5.2 and what our run says about it.

    Attributes:
        experiment: experiment name.
        claim: the claim in words, with its source.
        verdict: "supported", "not supported", "mixed" or "not tested".
        evidence: the comparison behind the verdict.
    """

    experiment: str
    claim: str
    verdict: str
    evidence: str


CLAIM_COLUMNS = [f.name for f in fields(Claim)]


def mean_mse(frame: pd.DataFrame, label: str, x: str) -> pd.Series:
    """Geometric mean over seeds of the eval error for ``label``, indexed by ``x``: of
    ``eval_nmse`` where the rows carry it (``error_column``: the verdict between models of one
    target is the same as on ``eval_mse``, Var(y_eval) being common), else of ``eval_mse``."""
    y = error_column(frame)
    rows = frame[frame["model_label"] == label].dropna(subset=[x])
    return rows.groupby(x)[y].apply(lambda v: float(np.exp(np.mean(np.log(v)))))


def _compare(name, text, better: pd.Series, worse: pd.Series, against=None) -> Claim:
    """Claim that ``better`` has lower MSE than ``worse`` at every shared x (or at each x of
    ``better`` against ``against(x)`` when given)."""
    pairs = []
    for x, value in better.items():
        ref_x = x if against is None else against(x)
        if ref_x is not None and ref_x in worse.index:
            pairs.append((x, value, worse[ref_x], ref_x))
    if not pairs:
        return Claim(name, text, "not tested", "no comparable configurations in this run")
    wins = sum(v < w for _, v, w, _ in pairs)
    verdict = ("supported" if wins == len(pairs) else "not supported" if wins == 0 else "mixed")
    evidence = "; ".join(f"{x:g}: {v:.3g} vs {w:.3g}" + ("" if r == x else f" (at {r:g})")
                         for x, v, w, r in pairs)
    return Claim(name, text, verdict, f"{wins}/{len(pairs)} lower — {evidence}")


def claims_for(name: str, frame: pd.DataFrame, configs: list[ExperimentConfig]) -> list[Claim]:
    """The claims that experiment ``name`` tests (Baykal et al. §5.2; for ``routers``, each
    router against the trained dense MLP), judged on ``frame``."""
    frame = with_size(frame)
    dense_units = mean_mse(frame, "dense", "activated_units")
    dense_size = mean_mse(frame, "dense", "size")
    claims = []

    def lsh_vs_dense(text, threshold=0):
        lsh = mean_mse(frame, "LSH", "size")
        lsh = lsh[lsh.index >= threshold]
        # dense at the same width if we ran it, otherwise our widest dense model below it
        def widest(b):
            widths = dense_size.index[dense_size.index <= b]
            return widths.max() if len(widths) else None
        return _compare(name, text, lsh, dense_size, against=widest)

    if name in ("fig2", "fig3"):
        dsm_labels = sorted({l for l in frame["model_label"] if l.startswith("DSM width")},
                            key=lambda l: int(l.split()[-1]))
        for label in dsm_labels:
            claims.append(_compare(name, f"{label} beats dense at equal activated units "
                                   "(Baykal et al. 2022, §5.2, Fig. 2a/3a)",
                                   mean_mse(frame, label, "activated_units"), dense_units))
        claims.append(lsh_vs_dense(
            "LSH beats dense from 2048 buckets (§5.2, Fig. 2b)" if name == "fig2"
            else "LSH beats dense at equal size (§5.2, Fig. 3b)", 2048 if name == "fig2" else 0))
    elif name == "fig4":
        claims.append(_compare(name, "DSM beats dense at equal activated units (§5.2, Fig. 4)",
                               mean_mse(frame, "DSM", "activated_units"), dense_units))
        claims.append(_compare(name, "random hash underperforms dense at equal activated units "
                               "(§5.2, Fig. 4)", dense_units,
                               mean_mse(frame, "random hash", "activated_units")))
        claims.append(lsh_vs_dense("LSH beats dense at equal size (§5.2, Fig. 4)"))
    elif name == "table1":
        dense = mean_mse(frame, "dense", "flops_paper")
        for label in ("DSM 50% sparsity", "DSM 25% sparsity"):
            claims.append(_compare(name, f"{label} beats dense at equal FLOPs (§5.2, Table 1)",
                                   mean_mse(frame, label, "flops_paper"), dense))
        dsm = mean_mse(frame, "DSM 25% sparsity", "flops_paper")
        if len(dsm) and len(dense):
            low, high = dsm.index.min(), dense.index.max()
            ok = dsm[low] < dense[high]
            claims.append(Claim(name, "DSM (25 %) at the smallest FLOPs beats dense at the "
                                "largest FLOPs (§5.2)", "supported" if ok else "not supported",
                                f"DSM {low:g} FLOPs: {dsm[low]:.3g}; dense {high:g} FLOPs: "
                                f"{dense[high]:.3g}"))
    elif name == "table2":
        dense = mean_mse(frame, "dense", "width")
        dsm = frame[frame["model"] == "dsm"]
        best = dsm.groupby(["width", "model_label"])[error_column(frame)].apply(
            lambda v: float(np.exp(np.mean(np.log(v))))).groupby("width").min()
        pairs = [(w, best[w], dense[w]) for w in best.index if w in dense.index]
        ok = [b <= AS_WELL_AS * d for _, b, d in pairs]
        verdict = ("supported" if all(ok) else "not supported" if not any(ok) else "mixed")
        claims.append(Claim(name, f"at the same total width a sparser DSM performs as well as "
                            f"dense (best DSM ≤ {AS_WELL_AS} × dense MSE; §5.2, Table 2)",
                            verdict if pairs else "not tested",
                            "; ".join(f"width {w:g}: best DSM {b:.3g} vs dense {d:.3g}"
                                      for w, b, d in pairs)))
    elif name == "routers":
        claims += _router_claims(name, frame)
    elif name == "subspace":
        for config in configs:
            k = config.target.subspace_k
            rows = frame[frame["target"] == config.target.label()]
            rows = rows[in_sample_regime(rows["buckets"], k, config.n_train)]
            law = scaling_table(rows, "buckets", n_boot=500, y=error_column(rows))
            if law.empty:
                claims.append(Claim(name, f"MSE ∝ buckets^(−2/k) at k = {k}", "not tested",
                                    "fewer than two bucket counts in the sample regime"))
                continue
            r = law.iloc[0]
            inside = r.alpha_low <= 2 / k <= r.alpha_high
            claims.append(Claim(
                name, f"MSE ∝ buckets^(−2/k) at k = {k} (Theorem 4.1, Lemma 4.2)",
                "supported" if inside else "not supported",
                f"fitted α = {r.alpha:.2f} [{r.alpha_low:.2f}, {r.alpha_high:.2f}] vs 2/k = "
                f"{2 / k:.2f}, on the {int(r.n_points)} bucket counts T with "
                f"n_train ≥ k·T·ln T"))
    return claims


def _router_claims(name: str, frame: pd.DataFrame) -> list[Claim]:
    """Each router against the dense MLP trained alike (``DenseMLP``, width a) at equal
    activated units a, per target: the comparison the router papers make against their
    dense baselines (COMET §5.2.1: the "smaller model" of p_k·N neurons; Csordás et al. §6;
    Baykal et al. §5.2 make it for DSM), here with both sides learning their features."""
    from experiments.presets import ROUTER_LABELS, TRAINED_DENSE_LABEL

    claims = []
    for target, rows in frame.groupby("target", sort=False):
        dense = mean_mse(rows, TRAINED_DENSE_LABEL, "activated_units")
        for label in ROUTER_LABELS.values():
            router = mean_mse(rows, label, "activated_units")
            if len(router):
                claims.append(_compare(
                    name, f"{label} beats the dense MLP trained alike at equal activated "
                    f"units, {target} (the router papers' dense comparison; COMET §5.2.1)",
                    router, dense))
    return claims


def _fits(frame: pd.DataFrame, default: str) -> str:
    """'exact', or e.g. 'exact (dense, DSM), sgd (COMET, …)' when models were fitted differently."""
    if "fit" not in frame or frame["fit"].nunique() <= 1:
        return default
    return ", ".join(f"{fit} ({', '.join(pd.unique(rows['model_label']))})"
                     for fit, rows in frame.groupby("fit", sort=False))


def _fmt(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.3g}"


def mixed_size_labels(frame: pd.DataFrame, x: str) -> list[str]:
    """Model labels of ``frame`` (with column ``size``, see ``with_size``) that have rows of
    different sizes at one value of ``x`` in one target: a pivot by ``x`` would average
    different models together (the LSH models: one activated bucket at every bucket count)."""
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
            names them; leave them out or pivot them by ``size``).
    """
    x = columns if index == "model_label" else index
    mixed = mixed_size_labels(frame, x) if {"model_label", x} <= {index, columns} else []
    if mixed:
        raise ValueError(f"models {mixed} have several sizes at one {x}: a pivot by {x} "
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


def experiment_markdown(name: str, frame: pd.DataFrame, configs: list[ExperimentConfig],
                        claims: list[Claim], fits: pd.DataFrame | None = None) -> str:
    """A Markdown section: each target's variance, results table(s), the paper's numbers where
    it has them, the fitted scaling exponents, the offset-law fits of ``fits``
    (``experiments.scaling.experiment_fits``) when given, and the claims."""
    frame = with_size(frame)
    what = "eval nMSE" if error_column(frame) == "eval_nmse" else "eval MSE"
    lines = [f"## {name}", "", f"Target: {', '.join(sorted({c.target.label() for c in configs}))}; "
             f"fit: {_fits(frame, configs[0].fit)}; seeds: {list(configs[0].seeds)}; n_train = "
             f"{configs[0].n_train}, n_eval = {configs[0].n_eval}; preset: {configs[0].preset}.", ""]
    lines += _variance_lines(frame)
    if name == "table1":
        ours = summary_table(frame, "flops_paper", "model_label")
        lines += [f"Ours ({what}, geometric mean over seeds):", "", ours.to_markdown(), "",
                  "Baykal et al. 2022, Table 1 (MSE):", "",
                  PAPER_TABLE1.to_markdown(index=False), ""]
    elif name == "table2":
        ours = summary_table(frame, "model_label", "width")
        lines += [f"Ours ({what}):", "", ours.to_markdown(), "",
                  "Baykal et al. 2022, Table 2:", "", PAPER_TABLE2.to_markdown(), ""]
    else:
        x = configs[0].panels.get("a", {}).get("x", "activated_units")
        x = x if x in frame else "activated_units"
        for target, rows in frame.groupby("target", sort=False):
            # Models whose x does not tell their sizes apart (LSH: one activated bucket at every
            # bucket count) are tabled by size instead, beside dense (its width), as in the
            # plots' LSH panels; a pivot never averages different model sizes together.
            by_size = mixed_size_labels(rows, x)
            table = summary_table(rows[~rows["model_label"].isin(by_size)], "model_label", x)
            lines += [f"{what[0].upper()}{what[1:]} by model and {x}, target {target}:", "",
                      table.to_markdown(), ""]
            if by_size and x != "size":
                sized = rows[rows["model_label"].isin(["dense", *by_size])]
                lines += [f"{what[0].upper()}{what[1:]} by model and size (buckets for "
                          f"{', '.join(by_size)}, "
                          f"width for dense), target {target}:", "",
                          summary_table(sized, "model_label", "size").rename(
                              columns=lambda v: f"{v:g}").to_markdown(), ""]
    laws = []
    for config in configs:
        for spec in config.panels.values():
            rows = frame[frame["target"] == config.target.label()]
            if "sample_regime_k" in spec:
                rows = rows[in_sample_regime(rows[spec["x"]], spec["sample_regime_k"],
                                             config.n_train)]
            law = scaling_table(rows, spec["x"], spec["models"], n_boot=500,
                                y=error_column(frame))
            if not law.empty:
                laws.append(law.assign(target=config.target.label(),
                                       theory_alpha=spec.get("theory_alpha")))
    if laws:
        laws = pd.concat(laws).drop_duplicates(["target", "model_label", "x"])
        lines += [f"Fitted scaling laws {what} ≈ C·N^(−α) (95 % bootstrap interval over "
                  f"seeds):", "",
                  laws[["target", "model_label", "x", "alpha", "alpha_low", "alpha_high",
                        "theory_alpha"]].to_markdown(index=False, floatfmt=".3f"), ""]
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
        lines += ["Claims:", "", "| claim | verdict | evidence |", "| --- | --- | --- |"]
        lines += [f"| {c.claim} | **{c.verdict}** | {c.evidence} |" for c in claims]
    return "\n".join(lines).rstrip("\n") + "\n"


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
                             out: pathlib.Path) -> tuple[list[pathlib.Path], list[Claim]]:
    """Plots (PNG and SVG), ``fits.csv`` (every power- and offset-law fit,
    ``experiments.scaling.experiment_fits``: columns ``FIT_COLUMNS``, the header even when
    nothing can be fitted), ``table.md`` and ``claims.csv`` (columns ``CLAIM_COLUMNS``, the
    header even when the experiment tests no claim) for one experiment."""
    out = pathlib.Path(out)
    claims = claims_for(name, frame, configs)
    fits = experiment_fits(name, configs, frame)
    fits_path = out / "fits.csv"
    fits.to_csv(fits_path, index=False)
    paths = []
    for i, config in enumerate(configs):
        rows = frame[frame["target"] == config.target.label()]
        panels = [(p, spec, rows) for p, spec in config.panels.items()]
        stem = out / (name if len(configs) == 1 else f"{name}_{i}")
        mask = None
        if config.target.subspace_k is not None:  # fit within the theorem's sample regime
            k, n_train = config.target.subspace_k, config.n_train
            mask = lambda r, k=k, n=n_train: in_sample_regime(r["buckets"], k, n)  # noqa: E731
        paths += plot_experiment(panels, stem, f"{name}: {config.target.label()}",
                                 fit_mask=mask)
    table = out / "table.md"
    table.write_text(experiment_markdown(name, frame, configs, claims, fits=fits))
    claims_path = out / "claims.csv"
    # the header always, so that an experiment without claims still gives a valid CSV
    pd.DataFrame([c.__dict__ for c in claims], columns=CLAIM_COLUMNS).to_csv(claims_path,
                                                                             index=False)
    return paths + [fits_path, table, claims_path], claims
