"""Scaling plots: log-log eval error against activated units, buckets, width or FLOPs, one
line per model (mean over seeds) with a band from the smallest to the largest seed. The error
is the normalised one, eval MSE / Var(y_eval) (``eval_nmse``), where the rows carry it
(``experiments.analysis.scaling.error_column``)."""

from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # noqa: E402

from experiments.analysis.tables import check_column, check_labels  # noqa: E402
from experiments.analysis.scaling import error_column, fit_power_law  # noqa: E402
from experiments.kinds.registry import FIT_REGIMES  # noqa: E402
from routing.validation import as_numpy, check_real  # noqa: E402


X_LABELS = {"activated_units": "activated units", "size": "total width / non-empty buckets",
            "buckets": "non-empty buckets", "width": "total width",
            "flops_paper": "FLOPs per example (paper's convention)"}
#: Model kinds whose ``size`` is their number of buckets (``with_size``); every other model's
#: is its total width.
BUCKET_KINDS = ("lsh", "lsh_table")
#: y-axis label of each error column.
Y_LABELS = {"eval_nmse": "eval nMSE = MSE / Var(y_eval)", "eval_mse": "eval MSE"}
#: Height (inches) of one row of a legend of fontsize 7 in two columns, below its panel.
LEGEND_ROW_INCHES = 0.19
#: Panels side by side in one row of a figure (Figures 2 and 3 have five).
PANELS_PER_ROW = 3


def with_size(frame: pd.DataFrame) -> pd.DataFrame:
    """Add column ``size``: the non-empty buckets of LSH models (``nonempty_buckets``, counted
    on the training data), the buckets of rows without that count, and the total width of the
    other models.

    The non-empty buckets of one model vary from seed to seed (new data, new hash functions),
    so a model's size is their mean over its seeds, rounded: the rows of one model — same
    ``experiment``, ``target``, ``model_key`` and ``fit``, where the frame has those columns —
    share one x, so that plots, pivots and paired comparisons across seeds line up. The
    per-seed count stays in ``nonempty_buckets``.

    Arguments:
        frame: results rows with columns ``buckets`` and ``width`` (``nonempty_buckets``
            optional).

    Returns:
        a copy with column ``size`` (float; nan where neither is known).
    """
    size = frame["buckets"].where(frame["buckets"].notna(), frame["width"]).astype(float)
    if "nonempty_buckets" in frame and frame["nonempty_buckets"].notna().any():
        nonempty = frame["nonempty_buckets"].astype(float)
        keys = [c for c in ("experiment", "target", "model_key", "fit") if c in frame]
        if "model_key" in keys:
            nonempty = nonempty.groupby([frame[c].astype(str) for c in keys]) \
                .transform("mean").round()
        size = nonempty.where(nonempty.notna(), size)
    return frame.assign(size=size)


def axis_label(frame: pd.DataFrame, x: str, labels: list[str]) -> str:
    """The x-axis label of a panel plotting ``labels`` against ``x``: for ``size`` it names
    which models are plotted by non-empty buckets (the bucket kinds, ``with_size``) and which
    by total width (DSM and the routers at their total width, dense at its width).

    Raises:
        ValueError: ``x`` is not a column of ``frame``; TypeError: ``labels`` not a list of
            strings.
    """
    check_column(frame, x, "x")
    labels = check_labels(labels)
    if x != "size":
        return X_LABELS.get(x, x)
    rows = frame[frame["model_label"].isin(labels)]
    by_buckets = list(pd.unique(rows.loc[rows["model"].isin(BUCKET_KINDS), "model_label"])) \
        if "model" in rows else []
    by_width = [label for label in pd.unique(rows["model_label"]) if label not in by_buckets]
    if not by_buckets:
        return "total width"
    if not by_width:
        return "non-empty buckets"
    # one bucket model by name; several (the LSH tables of a family at s = 1, 4, 16) by kind
    buckets = (by_buckets[0] if len(by_buckets) == 1 else
               "LSH" if all(str(b).startswith("LSH") for b in by_buckets) else "hash tables")
    width = ", ".join(by_width) if len(by_width) <= 2 else f"all but {buckets}"
    return f"total width ({width}) / non-empty buckets ({buckets})"


#: Smallest gap between two labelled x ticks of a panel, as a share of its log x span:
#: a panel 5.2 inches wide has about 4 inches of axis, a label of four digits about 0.35.
MIN_TICK_GAP = 0.12


def spaced_ticks(values, min_gap: float = MIN_TICK_GAP) -> np.ndarray:
    """The x values to label on a log axis: the positive ``values`` (sorted, unique), kept
    from the smallest up when at least ``min_gap`` of the log span lies between a value and
    the last kept one, so that no two labels run into each other (224 and 256 on a panel
    spanning 16 … 1024 would print as "22456"); the largest value replaces the last kept one
    when the two are too close.

    Arguments:
        values: array-like of x values (float); non-positive ones are dropped.
        min_gap: share of log10(max / min) in (0, 1).

    Returns:
        float array, sorted.

    Raises:
        ValueError: ``min_gap`` not in (0, 1); ``values`` not a 1-D array of finite reals.
    """
    min_gap = check_real(min_gap, "min_gap", 0.0, 1.0, low_open=True, high_open=True)
    values = as_numpy(values)
    if values.dtype.kind not in "biuf" or values.ndim != 1 or not np.isfinite(values).all():
        raise ValueError(f"values must be a 1-D array of finite reals, got dtype {values.dtype} "
                         f"and shape {values.shape}")
    values = np.unique(values.astype(float))
    values = values[values > 0]
    if len(values) < 2:
        return values
    logs = np.log10(values)
    gap = min_gap * (logs[-1] - logs[0])
    kept = [0]
    for i in range(1, len(values)):
        if logs[i] - logs[kept[-1]] >= gap:
            kept.append(i)
    if kept[-1] != len(values) - 1:
        if len(kept) > 1:
            kept[-1] = len(values) - 1
        else:
            kept.append(len(values) - 1)
    return values[kept]


def _log_x_ticks(ax, values) -> None:
    """Label only major ticks; over less than two decades (where matplotlib would label the
    minor ticks too, and 3×10¹ runs into 4×10¹), put them at plotted x values spaced apart
    (``spaced_ticks``)."""
    ax.xaxis.set_minor_formatter(NullFormatter())
    values = np.unique(np.asarray(values, dtype=float))
    values = values[values > 0]
    if len(values) < 2 or np.log10(values[-1] / values[0]) >= 2:
        return
    ax.xaxis.set_major_locator(FixedLocator(spaced_ticks(values)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


#: Characters per line of a panel's title (fontsize 9 on a 5.2-inch panel).
TITLE_WIDTH = 62
#: A title a config written before regimes were drawn from it carries its regime after this.
_OLD_REGIME_SUFFIX = "\n— "


def panel_regime(config, labels: list[str], rows: pd.DataFrame) -> str:
    """How the models of a panel were trained, in words, from the config that ran: "exact
    least squares", "Adam on the top layer, 30 steps of 256, lr 0.01", or — for a panel of
    models trained end to end (the routers) beside frozen-feature models — both, each with
    its models. Read from the rows' ``fit`` and ``model`` (kind) and the config's
    ``train_steps``, ``train_batch`` and ``train_lr``; "" when ``config`` is None or the rows carry
    no ``fit`` or none of ``labels``.

    Raises:
        TypeError: ``labels`` not a list of strings.
    """
    from experiments.runner.specs import TRAINED_KINDS

    labels = check_labels(labels)
    if config is None or "fit" not in rows or rows.empty:
        return ""
    rows = rows[rows["model_label"].isin(labels)]
    groups: dict[str, list[str]] = {}
    for label in labels:
        mine = rows[rows["model_label"] == label]
        if mine.empty:
            continue
        fit = str(mine["fit"].iloc[0])
        trained = "model" in mine and str(mine["model"].iloc[0]) in TRAINED_KINDS
        if fit == "exact":
            words = "exact least squares"
        elif trained:
            words = (f"trained end to end, {config.train_steps} steps of {config.train_batch} "
                     f"(own optimiser, lr)")
        else:
            words = (f"Adam on the top layer, {config.train_steps} steps of "
                     f"{config.train_batch}, lr {config.train_lr:g}")
        groups.setdefault(words, []).append(label)
    if len(groups) <= 1:  # none: no rows of ``labels``
        return next(iter(groups), "")
    import textwrap

    # the largest group is "the others", so that a title stays a few short lines
    ordered = sorted(groups.items(), key=lambda item: len(item[1]))
    lines = [f"{words}: {', '.join(members)}" for words, members in ordered[:-1]]
    lines.append(f"the others: {ordered[-1][0]}")
    return "\n".join(textwrap.fill(line, TITLE_WIDTH) for line in lines)


def panel_title(name: str, spec: dict, rows: pd.DataFrame, config=None) -> str:
    """A panel's title: "(name) " and the spec's title (without a regime an older config
    copied into it), then the regime of its models (``panel_regime``).

    Raises:
        TypeError: ``spec`` not a dict whose "models" is a list of model labels (strings).
    """
    from collections.abc import Mapping

    if not isinstance(spec, Mapping) or "models" not in spec:
        raise TypeError(f"spec must be a dict with a 'models' list, got {spec!r}")
    labels = check_labels(spec["models"], "spec['models']")
    base = str(spec.get("title", "")).split(_OLD_REGIME_SUFFIX)[0]
    regime = panel_regime(config, labels, rows)
    return f"({name}) {base}" + (f"\n{regime}" if regime else "")


def plot_panel(ax, frame: pd.DataFrame, x: str, labels: list[str], title: str = "",
               theory_alpha: float | None = None, fit_mask=None,
               colors: dict[str, str] | None = None, legend_ax=None,
               window: tuple[float | None, float | None] | None = None) -> None:
    """Draw one panel: a line (mean of log error over seeds, the error of ``error_column``)
    and min–max band per label; the fitted exponent in the legend uses the rows where
    ``fit_mask(rows)`` holds (all if None), and those points are drawn filled, the others
    hollow, and the fitted law is drawn dashed over them. ``window`` (min, max of x; None
    for an open end) shades the pre-registered fit window. ``colors`` maps labels to colours
    (so that a model keeps its colour across panels). The legend goes into ``legend_ax``
    (an empty axes below the panel) or, without one, to the right of the panel: never over
    data.

    Raises:
        ValueError: ``x`` not a column of ``frame``; ``theory_alpha`` not None or a finite
            real; TypeError: ``labels`` not a list of strings.
    """
    check_column(frame, x, "x")
    labels = check_labels(labels)
    if theory_alpha is not None:
        theory_alpha = check_real(theory_alpha, "theory_alpha")
    xs = []
    y = error_column(frame)
    for label in labels:
        rows = frame[frame["model_label"] == label].dropna(subset=[x])
        if rows.empty:
            continue
        stats = rows.groupby(x)[y].agg(
            mean=lambda v: float(np.exp(np.mean(np.log(v)))), low="min", high="max")
        xs += list(stats.index)
        fit_rows = rows if fit_mask is None else rows[fit_mask(rows)]
        text = label
        law = None
        if fit_rows[x].nunique() >= 2:
            law = fit_power_law(fit_rows, x, y=y, n_boot=200)
            text += f" ({law.label()})"
        line, = ax.plot(stats.index, stats["mean"], marker="o", markersize=3, label=text,
                        markerfacecolor="none" if fit_mask is not None else None,
                        color=(colors or {}).get(label))
        fitted = stats.loc[stats.index.isin(fit_rows[x].unique())]
        ax.plot(fitted.index, fitted["mean"], "o", markersize=3, color=line.get_color())
        ax.fill_between(stats.index, stats["low"], stats["high"], color=line.get_color(),
                        alpha=0.2, linewidth=0)
        if law is not None and fit_mask is not None:  # the law the legend's α belongs to
            grid = np.geomspace(fitted.index.min(), fitted.index.max(), 20)
            ax.plot(grid, np.exp(law.log_c) * grid ** -law.alpha, "--", linewidth=1,
                    color=line.get_color())
    if fit_mask is not None:
        ax.plot([], [], "o", markersize=3, color="0.3", label="filled: fitted (in window)")
        ax.plot([], [], "o", markersize=3, color="0.3", markerfacecolor="none",
                label="open: outside the fit window")
        ax.plot([], [], "--", color="0.3", label="fitted law C·x^(−α)")
    if window is not None and xs:
        # shaded over the plotted x only: a window reaching past the data does not widen it
        low, high = window
        low = min(xs) if low is None else max(low, min(xs) / 1.2)
        high = max(xs) if high is None else min(high, max(xs) * 1.2)
        if low < high:
            ax.axvspan(low, high, color="0.88", zorder=0,
                       label="pre-registered fit window of x: " + " … ".join(
                           "open" if bound is None else f"{bound:g}" for bound in window))
    if theory_alpha is not None:
        ax.plot([], [], " ", label=f"theory: α = 2/k = {theory_alpha:.2f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _log_x_ticks(ax, xs)
    ax.set_xlabel(axis_label(frame, x, labels))
    ax.set_ylabel(Y_LABELS[y])
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    if legend_ax is None:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    else:
        legend_ax.axis("off")
        legend_ax.legend(*ax.get_legend_handles_labels(), fontsize=7, ncol=2,
                         loc="upper center", borderaxespad=0)


def panel_rows(spec: dict, rows: pd.DataFrame) -> pd.DataFrame:
    """The rows a panel plots: those of its training regime when the panel names one
    (``spec["fit"]``: one of ``experiments.kinds.registry.FIT_REGIMES``) and the rows carry a
    ``fit`` column; all of ``rows`` otherwise.

    Raises:
        ValueError: ``spec["fit"]`` is neither None nor one of ``FIT_REGIMES``.
    """
    if spec.get("fit") is not None and spec["fit"] not in FIT_REGIMES:
        raise ValueError(f"spec['fit'] must be None or one of {FIT_REGIMES}, got "
                         f"{spec.get('fit')!r}")
    if spec.get("fit") is None or "fit" not in rows:
        return rows
    return rows[rows["fit"] == spec["fit"]]


def experiment_figure(panels: list[tuple[str, dict, pd.DataFrame]], suptitle: str,
                      fit_mask=None, config=None) -> plt.Figure:
    """One figure with a panel per (name, spec, rows), at most ``PANELS_PER_ROW`` in a row,
    each panel's legend in an axes of its own below it; a panel plots the rows of its regime
    (``panel_rows``). Titles name each panel's regime from ``config``, the
    ``ExperimentConfig`` that ran (``panel_title``; None: the specs' titles alone), and its
    ``fit_window`` on a panel's x is shaded when ``fit_mask`` is given. Returns the figure
    (the caller saves and closes it).

    Raises:
        ValueError: no panels, a spec without "x" and "models" (naming ``spec``), or as
            ``plot_panel`` and ``panel_rows``.
    """
    if not panels:
        raise ValueError("panels must hold at least one (title, spec, rows) entry")
    for _, spec, rows in panels:
        if not isinstance(spec, dict) or "x" not in spec or "models" not in spec:
            raise ValueError(f"spec must be a dict with 'x' and 'models', got {spec!r}")
        check_labels(spec["models"], "spec['models']")
        check_column(with_size(rows), spec["x"], "spec['x']")
        panel_rows(spec, rows)
    entries = max(len(spec["models"]) + ("theory_alpha" in spec) + 4 * (fit_mask is not None)
                  for _, spec, _ in panels)
    legend_height = LEGEND_ROW_INCHES * np.ceil(entries / 2) + 0.1
    n_cols = min(len(panels), PANELS_PER_ROW)
    n_rows = int(np.ceil(len(panels) / n_cols))
    fig, axes = plt.subplots(2 * n_rows, n_cols,
                             figsize=(5.2 * n_cols, (4.0 + legend_height) * n_rows),
                             squeeze=False, constrained_layout=True,
                             gridspec_kw={"height_ratios": [4.0, legend_height] * n_rows})
    labels = list(dict.fromkeys(label for _, spec, _ in panels for label in spec["models"]))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if len(labels) > len(cycle):  # no two labels of a figure share a colour: tab20's dark
        tab20 = plt.get_cmap("tab20").colors  # ten, then its light ten
        cycle = list(tab20[0::2]) + list(tab20[1::2])
    colors = {label: cycle[i % len(cycle)] for i, label in enumerate(labels)}
    for i, (name, spec, rows) in enumerate(panels):
        row, col = divmod(i, n_cols)
        mine = with_size(panel_rows(spec, rows))
        window = None
        if fit_mask is not None and config is not None and config.fit_window:
            window = config.fit_window.get(spec["x"])
        plot_panel(axes[2 * row, col], mine, spec["x"], spec["models"],
                   title=panel_title(name, spec, mine, config),
                   theory_alpha=spec.get("theory_alpha"), fit_mask=fit_mask, colors=colors,
                   legend_ax=axes[2 * row + 1, col], window=window)
    for i in range(len(panels), n_rows * n_cols):  # the last row's empty places
        row, col = divmod(i, n_cols)
        axes[2 * row, col].axis("off")
        axes[2 * row + 1, col].axis("off")
    fig.suptitle(suptitle, fontsize=10)
    return fig


def plot_experiment(panels: list[tuple[str, dict, pd.DataFrame]], path_stem: pathlib.Path,
                    suptitle: str, fit_mask=None, config=None) -> list[pathlib.Path]:
    """``experiment_figure`` (each panel brings its rows; ``config``: the config that ran,
    whose regime each title names) written as PNG and SVG. Returns the two paths."""
    fig = experiment_figure(panels, suptitle, fit_mask=fit_mask, config=config)
    paths = [path_stem.with_suffix(".png"), path_stem.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return paths
