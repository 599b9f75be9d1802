"""Scaling laws: fit MSE ≈ C · N^(−α) per model, with a bootstrap interval over seeds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class PowerLaw:
    """A fitted law MSE ≈ C · N^(−α).

    Attributes:
        alpha: the exponent α (larger: faster decay).
        log_c: natural log of C.
        alpha_low, alpha_high: 95 % bootstrap interval over seeds (nan with one seed).
        n_points: number of distinct N values used.
    """

    alpha: float
    log_c: float
    alpha_low: float
    alpha_high: float
    n_points: int

    def label(self) -> str:
        if np.isnan(self.alpha_low):
            return f"α={self.alpha:.2f}"
        return f"α={self.alpha:.2f} [{self.alpha_low:.2f}, {self.alpha_high:.2f}]"


def fit_log_log(n: np.ndarray, mse: np.ndarray) -> tuple[float, float]:
    """Least squares of ln(mse) on ln(n): returns (α, ln C) for mse ≈ C · n^(−α).

    Raises:
        ValueError: fewer than two distinct positive ``n`` or a non-positive ``mse``.
    """
    n, mse = np.asarray(n, dtype=float), np.asarray(mse, dtype=float)
    if len(np.unique(n)) < 2 or np.any(n <= 0) or np.any(mse <= 0):
        raise ValueError("need at least two distinct positive N and positive MSE values")
    slope, intercept = np.polyfit(np.log(n), np.log(mse), 1)
    return float(-slope), float(intercept)


def fit_power_law(frame: pd.DataFrame, x: str, y: str = "eval_mse", n_boot: int = 1000,
                  seed: int = 0) -> PowerLaw:
    """Fit ``y`` ≈ C · ``x``^(−α) on the per-``x`` mean of log ``y`` over seeds.

    The bootstrap resamples seeds with replacement (all rows of a drawn seed together) and
    refits; the interval is the 2.5 and 97.5 percentiles of α.

    Arguments:
        frame: rows with columns ``x``, ``y`` and ``seed``.
        x, y: column names.
        n_boot: bootstrap resamples.
        seed: seed of the bootstrap.

    Raises:
        ValueError: fewer than two distinct x values.
    """
    frame = frame[[x, y, "seed"]].dropna()
    frame = frame[(frame[x] > 0) & (frame[y] > 0)]

    def fit(rows):
        means = rows.assign(log_y=np.log(rows[y])).groupby(x)["log_y"].mean()
        return fit_log_log(means.index.to_numpy(), np.exp(means.to_numpy()))

    alpha, log_c = fit(frame)
    seeds = frame["seed"].unique()
    low = high = float("nan")
    if len(seeds) > 1:
        rng = np.random.default_rng(seed)
        groups = {s: frame[frame["seed"] == s] for s in seeds}
        alphas = []
        for _ in range(n_boot):
            drawn = pd.concat([groups[s] for s in rng.choice(seeds, size=len(seeds))])
            if drawn[x].nunique() >= 2:
                alphas.append(fit(drawn)[0])
        low, high = np.percentile(alphas, [2.5, 97.5])
    return PowerLaw(alpha, log_c, float(low), float(high), int(frame[x].nunique()))


def scaling_table(frame: pd.DataFrame, x: str, labels: list[str] | None = None,
                  n_boot: int = 1000) -> pd.DataFrame:
    """One fitted law per model label: columns model_label, x, alpha, alpha_low, alpha_high,
    log_c, n_points (labels with fewer than two x values are skipped)."""
    rows = []
    for label, group in frame.groupby("model_label", sort=False):
        if labels is not None and label not in labels:
            continue
        if group[x].dropna().nunique() < 2:
            continue
        law = fit_power_law(group, x, n_boot=n_boot)
        rows.append({"model_label": label, "x": x, "alpha": law.alpha,
                     "alpha_low": law.alpha_low, "alpha_high": law.alpha_high,
                     "log_c": law.log_c, "n_points": law.n_points})
    return pd.DataFrame(rows)
