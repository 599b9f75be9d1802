"""Scaling plots: log-log eval MSE against activated units, buckets, width or FLOPs, one line
per model (mean over seeds) with a band from the smallest to the largest seed."""

from __future__ import annotations

import pathlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from experiments.scaling import fit_power_law  # noqa: E402

X_LABELS = {"activated_units": "activated units", "size": "width (dense) / buckets (LSH)",
            "buckets": "non-empty buckets", "width": "total width",
            "flops_paper": "FLOPs per example (paper's convention)"}


def with_size(frame: pd.DataFrame) -> pd.DataFrame:
    """Add column ``size``: the width of dense models and the buckets of LSH models."""
    size = frame["buckets"].where(frame["buckets"].notna(), frame["width"])
    return frame.assign(size=size.astype(float))


def plot_panel(ax, frame: pd.DataFrame, x: str, labels: list[str], title: str = "",
               theory_alpha: float | None = None, fit_mask=None,
               colors: dict[str, str] | None = None) -> None:
    """Draw one panel: a line (mean of log MSE over seeds) and min–max band per label; the
    fitted exponent in the legend uses the rows where ``fit_mask(rows)`` holds (all if None),
    and those points are drawn filled, the others hollow. ``colors`` maps labels to colours
    (so that a model keeps its colour across panels)."""
    for label in labels:
        rows = frame[frame["model_label"] == label].dropna(subset=[x])
        if rows.empty:
            continue
        stats = rows.groupby(x)["eval_mse"].agg(
            mean=lambda v: float(np.exp(np.mean(np.log(v)))), low="min", high="max")
        fit_rows = rows if fit_mask is None else rows[fit_mask(rows)]
        text = label
        if fit_rows[x].nunique() >= 2:
            text += f" ({fit_power_law(fit_rows, x, n_boot=200).label()})"
        line, = ax.plot(stats.index, stats["mean"], marker="o", markersize=3, label=text,
                        markerfacecolor="none" if fit_mask is not None else None,
                        color=(colors or {}).get(label))
        fitted = stats.loc[stats.index.isin(fit_rows[x].unique())]
        ax.plot(fitted.index, fitted["mean"], "o", markersize=3, color=line.get_color())
        ax.fill_between(stats.index, stats["low"], stats["high"], color=line.get_color(),
                        alpha=0.2, linewidth=0)
    if theory_alpha is not None:
        ax.plot([], [], " ", label=f"theory: α = 2/k = {theory_alpha:.2f}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(X_LABELS.get(x, x))
    ax.set_ylabel("eval MSE")
    ax.set_title(title, fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)


def plot_experiment(frame: pd.DataFrame, panels: list[tuple[str, dict, pd.DataFrame]],
                    path_stem: pathlib.Path, suptitle: str,
                    fit_mask=None) -> list[pathlib.Path]:
    """One figure with a panel per (name, spec, rows); written as PNG and SVG."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.0), squeeze=False,
                             constrained_layout=True)
    labels = list(dict.fromkeys(label for _, spec, _ in panels for label in spec["models"]))
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colors = {label: cycle[i % len(cycle)] for i, label in enumerate(labels)}
    for ax, (name, spec, rows) in zip(axes[0], panels):
        plot_panel(ax, with_size(rows), spec["x"], spec["models"],
                   title=f"({name}) {spec.get('title', '')}",
                   theory_alpha=spec.get("theory_alpha"), fit_mask=fit_mask, colors=colors)
    fig.suptitle(suptitle, fontsize=10)
    paths = [path_stem.with_suffix(".png"), path_stem.with_suffix(".svg")]
    for path in paths:
        fig.savefig(path, dpi=110)
    plt.close(fig)
    return paths
