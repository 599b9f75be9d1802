"""Every fit of an experiment, as ``fits.csv`` holds them: for each config, panel and model
label, the power and the offset law of the error against the panel's x (``experiments.analysis.
scaling.fit_law``), on the rows inside the panel's window (the config's ``fit_window``, and the
rules of ``experiments.analysis.fit_window`` where a panel states them)."""

from __future__ import annotations

import pandas as pd

from experiments.analysis.fit_window import in_sample_regime, window_mask
from experiments.analysis.fit_window import window_text as rule_text
from experiments.analysis.plots import panel_rows as regime_rows
from experiments.analysis.plots import with_size
from experiments.analysis.scaling import (FIT_COLUMNS, LAWS, MIN_POINTS, apply_fit_window,
                                          error_column, fit_law, window_text)
from routing.validation import check_int, check_seed


#: Bootstrap resamples of ``experiment_fits`` by preset: a robust offset fit costs ~10 ms per
#: resample on one core and the quick preset has ~70 fits, so 100 there (its 2.5/97.5
#: percentiles lie between the 2nd/3rd and the 97th/98th refits: coarse); 1000 for the paper
#: preset and for configs of any other preset.
FIT_BOOT = {"tiny": 50, "quick": 100, "paper": 1000}


def panel_window(config, spec: dict, rows: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """The rows of one panel that its fits use, and the window in words: the config's
    ``fit_window`` for the panel's x (``apply_fit_window``); for a panel with
    ``sample_regime_k``, Theorem 4.1's sample condition (``in_sample_regime``); for a panel with
    a ``window_rule``, the geometry window of ``experiments.analysis.fit_window.window_mask`` (which needs
    the rows' ``experiments.analysis.fit_window.GEOMETRY_COLUMNS``, ``experiments.papers.subspace_sweep.with_geometry``).

    Arguments:
        config: the ``ExperimentConfig`` the rows belong to.
        spec: its panel ({"x": column, …}).
        rows: results rows of the config's target (any model).

    Returns:
        (rows inside the window, text for fits.csv's ``window``).

    Raises:
        ValueError: as ``apply_fit_window`` and ``experiments.analysis.fit_window.window_mask``.
    """
    x = spec["x"]
    window = (config.fit_window or {}).get(x)
    text = window_text(x, window)
    rows = apply_fit_window(rows, x, window)
    if "window_rule" in spec:
        k = spec.get("sample_regime_k", config.target.subspace_k)
        rows = rows[window_mask(rows, spec["window_rule"], k, config.n_train)]
        text += "; " + rule_text(spec["window_rule"], k)
    elif "sample_regime_k" in spec:
        rows = rows[in_sample_regime(rows[x], spec["sample_regime_k"], config.n_train)]
        text += f"; n_train >= k*{x}*ln({x}) (k = {spec['sample_regime_k']})"
    return rows, text


def experiment_fits(name: str, configs, frame: pd.DataFrame, n_boot: int | None = None,
                    seed: int = 0) -> pd.DataFrame:
    """Every fit of an experiment: for each config, panel and model label of the panel, the
    power and the offset law of the error (``error_column``) against the panel's x, on the rows
    inside the panel's window (``panel_window``: the config's ``fit_window`` for that x, and
    for the subspace panels the sample condition of Theorem 4.1 and the window rule of
    ``experiments.papers.subspace_sweep``). A law is left out where the window holds too few distinct x
    values with a positive error for it.

    Arguments:
        name: the experiment's name (column ``experiment``).
        configs: its ``ExperimentConfig`` list.
        frame: its results rows (``results.csv``; column ``size`` is added when missing and
            ``buckets`` and ``width`` are there, ``experiments.analysis.plots.with_size``; a subspace
            panel needs the ``experiments.analysis.fit_window.GEOMETRY_COLUMNS``).
        n_boot: bootstrap resamples of every fit (``fit_law``); None: ``FIT_BOOT`` of the
            first config's preset.
        seed: seed of every fit's bootstrap.

    A panel of one training regime (``"fit"`` in the panel: ``experiments.analysis.plots.panel_rows``)
    fits that regime's rows only; a curve in several panels with the same rows, x and window
    (dense beside each LSH family) is fitted once, and its row repeated per panel.

    Returns:
        DataFrame with columns ``FIT_COLUMNS`` (one row per fit; none when nothing fits).

    Raises:
        ValueError: a subspace panel's rows lack the geometry columns.
    """
    if n_boot is not None:
        n_boot = check_int(n_boot, "n_boot", low=0)
    seed = check_seed(seed)
    if n_boot is None:
        n_boot = FIT_BOOT.get(configs[0].preset, 1000) if configs else 0
    if "size" not in frame and {"buckets", "width"} <= set(frame.columns):
        frame = with_size(frame)
    y = error_column(frame)
    rows = []
    done = {}  # one fit per (target, regime, label, x, window): panels share curves (dense)
    for config in configs:
        target = config.target.label()
        ours = frame[frame["target"] == target] if "target" in frame else frame
        for panel, spec in config.panels.items():
            x = spec["x"]
            if x not in ours:
                continue
            # a panel of one training regime fits that regime's rows only (``"fit"``)
            panel_rows, text = panel_window(config, spec, regime_rows(spec, ours))
            for label in spec["models"]:
                model_rows = panel_rows[panel_rows["model_label"] == label]
                model_rows = model_rows[(model_rows[x] > 0) & (model_rows[y] > 0)]
                fits = _fit_value(model_rows)
                for law in LAWS:
                    if model_rows[x].nunique() < MIN_POINTS[law]:
                        continue
                    key = (target, fits, label, x, text, law)
                    if key not in done:
                        done[key] = fit_law(model_rows, x, y, law=law, n_boot=n_boot,
                                            seed=seed).row()
                    rows.append({"experiment": name, "target": target, "panel": panel,
                                 "fit": fits, "x": x, "y": y, "model_label": label,
                                 **done[key], "window": text})
    return pd.DataFrame(rows, columns=FIT_COLUMNS)


def _fit_value(rows: pd.DataFrame) -> str:
    """The training regime(s) of a fit's rows for ``fits.csv``'s ``fit`` column: "exact",
    "adam", both joined by "+" when a curve mixes them, "" when the rows carry none."""
    if "fit" not in rows:
        return ""
    return "+".join(sorted(map(str, pd.unique(rows["fit"].dropna()))))
