"""Scaling laws: the pure power law MSE ≈ C · N^(−α) per model, with a bootstrap interval
over seeds (``fit_power_law``), and the offset law nmse ≈ E + A · N^(−α) fitted robustly with
bootstrap intervals over seeds and points and a leave-largest-out check (``fit_law``;
``experiments.analysis.fits.experiment_fits`` gathers every fit of an experiment into ``fits.csv``)."""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numba import njit

from inference import fit_exponent
from routing.validation import check_choice, check_int, check_real


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
    """Least squares of ln(mse) on ln(n): returns (α, ln C) for mse ≈ C · n^(−α)
    (``inference.fit_exponent``: α is minus its slope, ln C its intercept).

    Raises:
        ValueError: ``n`` and ``mse`` not finite real 1-D arrays of one length; fewer than two
            distinct positive ``n`` or a non-positive ``mse``.
    """
    from routing.validation import check_points

    n = check_points(np.asarray(n)[:, None] if np.ndim(n) == 1 else n, 1, "n")[:, 0]
    mse = check_points(np.asarray(mse)[:, None] if np.ndim(mse) == 1 else mse, 1, "mse")[:, 0]
    if len(n) != len(mse):
        raise ValueError(f"n and mse must have one length, got {len(n)} and {len(mse)}")
    if len(np.unique(n)) < 2 or np.any(n <= 0) or np.any(mse <= 0):
        raise ValueError("need at least two distinct positive n and positive mse values")
    fit = fit_exponent(n, mse)
    return float(-fit.slope), float(fit.intercept)


def fit_power_law(frame: pd.DataFrame, x: str, y: str = "eval_mse", n_boot: int = 1000,
                  seed: int = 0) -> PowerLaw:
    """Fit ``y`` ≈ C · ``x``^(−α) on the per-``x`` mean of log ``y`` over seeds.

    The bootstrap resamples seeds with replacement (all rows of a drawn seed together) and
    refits; the interval is the 2.5 and 97.5 percentiles of α.

    Arguments:
        frame: rows with columns ``x``, ``y`` and ``seed``.
        x, y: column names.
        n_boot: bootstrap resamples (>= 1).
        seed: seed of the bootstrap.

    Raises:
        ValueError: ``x``/``y`` not columns of ``frame``; fewer than two distinct x values
            with a positive y (naming x); ``n_boot`` not an integer >= 1; a bad ``seed``.
    """
    from experiments.analysis.tables import check_column
    from routing.validation import check_seed

    check_column(frame, x, "x")
    check_column(frame, y, "y")
    n_boot = check_int(n_boot, "n_boot", low=1)
    seed = check_seed(seed)
    frame = frame[[x, y, "seed"]].dropna()
    frame = frame[(frame[x] > 0) & (frame[y] > 0)]
    if frame[x].nunique() < 2:
        raise ValueError(f"x: column {x!r} has fewer than two distinct positive values with a "
                         f"positive {y}: no power law can be fitted")

    def fit(rows):
        means = rows.assign(log_y=np.log(rows[y])).groupby(x)["log_y"].mean()
        return fit_log_log(means.index.to_numpy(), np.exp(means.to_numpy()))

    alpha, log_c = fit(frame)
    seeds = frame["seed"].unique()
    low = high = float("nan")
    if len(seeds) > 1:
        alphas = _bootstrap_alphas(frame, x, y, seeds, n_boot, seed)
        if len(alphas):
            low, high = np.percentile(alphas, [2.5, 97.5])
    return PowerLaw(alpha, log_c, float(low), float(high), int(frame[x].nunique()))


def _bootstrap_alphas(frame: pd.DataFrame, x: str, y: str, seeds: np.ndarray, n_boot: int,
                      seed: int) -> np.ndarray:
    """The bootstrap exponents of ``fit_power_law``, all resamples at once: resample b draws
    ``rng.choice(seeds, len(seeds))`` (the same stream as drawing the seeds themselves); at each
    x the mean of ln y over the drawn rows (a seed drawn twice counts twice) is the drawn
    seeds' sums over their counts, and α is minus the least-squares slope of those means on
    ln x — the fit of ``fit_log_log`` in closed form. Resamples with fewer than two x values
    are left out. Returns a float array of at most ``n_boot`` exponents."""
    xs, x_index = np.unique(frame[x].to_numpy(dtype=float), return_inverse=True)
    seed_index = pd.Index(seeds).get_indexer(frame["seed"])
    log_y = np.log(frame[y].to_numpy(dtype=float))
    sums = np.zeros((len(seeds), len(xs)))  # (S, X): Σ ln y of a seed's rows at each x
    counts = np.zeros((len(seeds), len(xs)))
    np.add.at(sums, (seed_index, x_index), log_y)
    np.add.at(counts, (seed_index, x_index), 1.0)
    draws = np.random.default_rng(seed).choice(len(seeds), size=(n_boot, len(seeds)))
    times = np.zeros((n_boot, len(seeds)))  # (B, S): how often each seed is drawn
    np.add.at(times, (np.arange(n_boot)[:, None], draws), 1.0)
    total, count = times @ sums, times @ counts  # (B, X)
    weight = (count > 0).astype(float)
    mean_y = np.divide(total, count, out=np.zeros_like(total), where=count > 0)
    u = np.log(xs)[None, :]
    n = weight.sum(axis=1, keepdims=True)
    keep = n[:, 0] >= 2
    n = np.maximum(n, 1.0)
    du = u - (weight * u).sum(axis=1, keepdims=True) / n
    dv = mean_y - (weight * mean_y).sum(axis=1, keepdims=True) / n
    slope = (weight * du * dv).sum(axis=1) / np.maximum((weight * du * du).sum(axis=1), 1e-300)
    return -slope[keep]


def scaling_table(frame: pd.DataFrame, x: str, labels: list[str] | None = None,
                  n_boot: int = 1000, y: str = "eval_mse") -> pd.DataFrame:
    """One fitted pure power law of ``y`` per model label (``fit_power_law``): columns
    model_label, x, alpha, alpha_low, alpha_high, log_c, n_points (labels with fewer than two
    x values are skipped).

    Raises:
        ValueError: ``x`` or ``y`` not a column of ``frame``; ``labels`` neither None nor a
            list of labels; ``n_boot`` not an integer >= 1.
    """
    from experiments.analysis.tables import check_column, check_labels

    check_column(frame, x, "x")
    check_column(frame, y, "y")
    if labels is not None:
        labels = check_labels(labels)
    n_boot = check_int(n_boot, "n_boot", low=1)
    rows = []
    for label, group in frame.groupby("model_label", sort=False):
        if labels is not None and label not in labels:
            continue
        if group[x].dropna().nunique() < 2:
            continue
        law = fit_power_law(group, x, y=y, n_boot=n_boot)
        rows.append({"model_label": label, "x": x, "alpha": law.alpha,
                     "alpha_low": law.alpha_low, "alpha_high": law.alpha_high,
                     "log_c": law.log_c, "n_points": law.n_points})
    return pd.DataFrame(rows)


# -- the offset law nmse ≈ E + A·N^(−α), fitted robustly, and every fit of an experiment --

#: Percentiles of the bootstrap distribution that bound every interval of ``LawFit`` (a 95 %
#: percentile interval).
INTERVAL_PERCENTILES = (2.5, 97.5)
#: Huber δ on log residuals: Hoffmann et al. 2022 (Chinchilla, approach 3) and Besiroglu et
#: al. 2024 (its replication, §2) use 1e-3, so that the fit is nearly a least-absolute-deviation
#: fit in log space and a few outlying points do not carry it.
HUBER_DELTA = 1e-3
LAWS = ("power", "offset")
#: Distinct x values a law needs: its number of parameters (2 or 3).
MIN_POINTS = {"power": 2, "offset": 3}
#: Columns of ``fits.csv`` (``experiment_fits``), in order; ``fit`` is the training regime of
#: the fitted rows ("exact", "adam": ``experiments.papers.presets.REGIMES``).
FIT_COLUMNS = ["experiment", "target", "panel", "fit", "x", "y", "model_label", "law", "E",
               "E_low", "E_high", "A", "A_low", "A_high", "alpha", "alpha_low", "alpha_high",
               "alpha_tied_low", "alpha_tied_high", "window", "x_min", "x_max", "n_points",
               "n_seeds", "rms_log_residual", "extrapolation_error", "n_boot"]


def error_column(frame: pd.DataFrame) -> str:
    """The error column that plots, fits and claims compare: ``eval_nmse`` (eval MSE / Var of
    the evaluation labels) when every row has it, else ``eval_mse``.

    Tables made by hand, or by sweeps older than the normalised columns and not resumed since,
    lack ``eval_nmse``; a comparison between models of one target has the same verdict either
    way (Var(y_eval) is common to them), and a frame never mixes the two columns.
    """
    if "eval_nmse" in frame and len(frame) and frame["eval_nmse"].notna().all():
        return "eval_nmse"
    return "eval_mse"


def _check_window(window) -> tuple[float | None, float | None] | None:
    if window is None:
        return None
    if not isinstance(window, (tuple, list)) or len(window) != 2:
        raise ValueError(f"window must be None or a pair (min, max) with None for an open end, "
                         f"got {window!r}")
    low, high = (None if v is None else check_real(v, "window bound") for v in window)
    if low is not None and high is not None and low > high:
        raise ValueError(f"window must have min <= max, got {window!r}")
    return low, high


def apply_fit_window(frame: pd.DataFrame, x: str, window) -> pd.DataFrame:
    """The rows of ``frame`` whose ``x`` lies in ``window`` = (min, max), both ends included,
    None for an open end (None: every row). Rows with a missing ``x`` are dropped.

    Arguments:
        frame: rows with a numeric column ``x``.
        x: the column the window bounds.
        window: None or a pair (min, max) of floats or None, min <= max.

    Raises:
        ValueError: ``window`` not such a pair, or ``x`` not a column of ``frame``.
    """
    window = _check_window(window)
    if x not in frame:
        raise ValueError(f"x must be a column of the frame, got {x!r}")
    rows = frame.dropna(subset=[x])
    if window is None:
        return rows
    low, high = window
    keep = np.ones(len(rows), dtype=bool)
    if low is not None:
        keep &= rows[x].to_numpy(dtype=float) >= low
    if high is not None:
        keep &= rows[x].to_numpy(dtype=float) <= high
    return rows[keep]


def window_text(x: str, window) -> str:
    """``window`` as it is written in ``fits.csv``: "all" or e.g. "buckets in [30, inf]".

    Arguments:
        x: the name of the window's column (any string: the text has no frame to check it
            against). window: None or (low, high) as ``apply_fit_window`` takes it.

    Raises:
        TypeError: ``x`` is not a string.
        ValueError: a bad ``window``.
    """
    if not isinstance(x, str):
        raise TypeError(f"x must be a column name (a string), got {x!r}")
    window = _check_window(window)
    if window is None:
        return "all"
    low, high = (("-inf" if window[0] is None else f"{window[0]:g}"),
                 ("inf" if window[1] is None else f"{window[1]:g}"))
    return f"{x} in [{low}, {high}]"


def _offset_starts(log_n: np.ndarray, log_y: np.ndarray) -> list[np.ndarray]:
    """A grid of (e, a, α) starting points scaled to the data: the curve starts at the first
    point, with a floor well below, near, or at the smallest value."""
    starts = []
    first = log_y[np.argmin(log_n)]
    for alpha in (0.25, 0.5, 1.0, 2.0):
        for floor in (-6.0, -1.0, -0.1):
            starts.append(np.array([log_y.min() + floor, first + alpha * log_n.min(), alpha]))
    return starts


@njit(cache=True)
def _offset_objective(theta, log_n, log_y, weights, delta):
    """The offset law's Huber objective Σ w·Huber_δ(logaddexp(a − α ln N, e) − ln y) at
    θ = (e, a, α) and its gradient in θ: (float, (3,) float64). One loop over the points
    (4–12 here) where the numpy expression took ~10 calls of ~2 µs each; L-BFGS-B calls it
    ~130 times per start, ~300,000 times for the quick preset's fits."""
    e, a, alpha = theta[0], theta[1], theta[2]
    loss, g_sum, gp_sum, gp_log_n = 0.0, 0.0, 0.0, 0.0
    for i in range(len(log_n)):
        power = a - alpha * log_n[i]
        gap = power - e  # logaddexp(power, e), as numpy computes it
        if gap > 0:
            pred = power + np.log1p(np.exp(-gap))
        elif gap <= 0:
            pred = e + np.log1p(np.exp(gap))
        else:
            pred = power + e  # nan in, nan out
        r = pred - log_y[i]
        slope = min(max(r, -delta), delta)  # Huber'(r); Huber(r) = slope · (r − slope / 2)
        loss += weights[i] * (slope * (r - 0.5 * slope))
        g = weights[i] * slope
        gp = g * np.exp(power - pred)  # share of the power term in the prediction
        g_sum += g
        gp_sum += gp
        gp_log_n += gp * log_n[i]
    grad = np.empty(3)
    grad[0] = g_sum - gp_sum
    grad[1] = gp_sum
    grad[2] = -gp_log_n
    return loss, grad


def _fit_offset_logs(log_n, log_y, weights, starts,
                     delta) -> tuple[np.ndarray, float, tuple[float, float]]:
    """The best (e, a, α) over ``starts``, its Huber objective, and the (lowest, highest) α
    of the starts that end tied with it (``_tied_range``): L-BFGS-B on
    Σ w·Huber(logsumexp(a − α ln N, e) − ln y) (``_offset_objective``). The objective and
    the gradient share one evaluation per θ, matched by θ's bytes (scipy's own ``jac=True``
    memo compares and copies arrays, 3x the kernel's cost on these 3-vectors)."""
    from scipy.optimize import minimize

    log_n, log_y, weights = (np.ascontiguousarray(v, dtype=np.float64)
                             for v in (log_n, log_y, weights))
    delta = float(delta)

    last = [None, 0.0, None]  # (θ's bytes, objective, gradient) of the last θ evaluated

    def objective(theta):
        key = theta.tobytes()
        if key != last[0]:
            last[0], (last[1], last[2]) = key, _offset_objective(theta, log_n, log_y,
                                                                 weights, delta)
        return last[1]

    def gradient(theta):  # scipy asks for it right after the objective at the same θ
        objective(theta)
        return last[2]

    span = log_y.max() - log_y.min()
    bounds = [(log_y.min() - 20.0, log_y.max() + 1.0), (None, None), (0.0, 10.0)]
    best, best_loss = None, np.inf
    ends = []  # (objective, α) where each start ended
    low, high = [bounds[0][0], -np.inf, 0.0], [bounds[0][1], np.inf, 10.0]
    for start in starts:
        start = np.clip(start, low, high)
        result = minimize(objective, start, jac=gradient, method="L-BFGS-B", bounds=bounds,
                          options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-12 * (1 + span)})
        if np.all(np.isfinite(result.x)):
            ends.append((float(result.fun), float(result.x[2])))
            if result.fun < best_loss:
                best, best_loss = result.x, float(result.fun)
    if best is None:  # pragma: no cover - bounded α and E, finite data: never seen
        raise ValueError("the offset-law fit found no finite optimum from any start")
    return best, best_loss, _tied_range(ends)


#: Starts whose objective is within this relative distance of the lowest one end *tied* with
#: it (``_tied_range``): L-BFGS-B stops within ~1e-15 of a minimum, so a relative 1e-9 is far
#: above its noise and far below the gap between distinct local minima.
TIE_RTOL = 1e-9


def _tied_range(ends) -> tuple[float, float]:
    """The lowest and highest α among the ends (objective, α) whose objective is within
    ``TIE_RTOL`` (relative) of the lowest objective.

    With δ = 1e-3 the offset-law fit is nearly a least-absolute-deviation fit in log space,
    and such a fit need not have a unique minimiser: on fig2's dense curve (quick preset,
    exact fits) 6 of the 12 starts ended at one objective, 0.0010028544, equal to 1e-12, at
    α from 0.497 to 0.530, and a change of 3e-7 in the errors moved the reported α from
    0.5017 to 0.4966. A wide range says the point estimate α is one of a set of equally good
    fits; a unique minimum gives a range of width ~1e-8.

    Arguments:
        ends: non-empty sequence of (objective ≥ 0, α) pairs, floats.

    Returns:
        (α low, α high) as floats.

    Raises:
        ValueError: ``ends`` empty.
    """
    if not len(ends):
        raise ValueError("ends must hold at least one (objective, alpha) pair")
    lowest = min(loss for loss, _ in ends)
    tied = [alpha for loss, alpha in ends if loss <= lowest + TIE_RTOL * abs(lowest)]
    return float(min(tied)), float(max(tied))


def fit_offset_law(n, y, weights=None,
                   delta: float = HUBER_DELTA) -> tuple[float, float, float]:
    """Fit y ≈ E + A · n^(−α) robustly: the Huber loss (δ = ``delta``) of the log residuals
    ln(E + A·n^(−α)) − ln y, minimised over (ln E, ln A, α) by L-BFGS-B from a grid of 12
    starts, as Besiroglu et al. 2024 (§2, "Chinchilla scaling: a replication attempt") refit
    Hoffmann et al. 2022's approach 3. α is bounded to [0, 10] and ln E to
    [ln min y − 20, ln max y + 1] (E effectively 0 at the lower end).

    Arguments:
        n: (P,) positive sizes (at least 3 distinct).
        y: (P,) positive errors (any unit: the fit is in log space; E and A in y's unit).
        weights: (P,) non-negative weights of the points (default 1; a bootstrap's counts).
        delta: the Huber δ, > 0.

    Returns:
        (E, A, α) as floats.

    Raises:
        ValueError: complex ``n``, ``y`` or ``weights``, fewer than 3 distinct positive
            ``n``, non-positive ``y``, mismatched lengths, negative weights, or ``delta`` ≤ 0.
    """
    for name, value in (("n", n), ("y", y), ("weights", weights)):
        if value is not None and np.iscomplexobj(value):  # not cast silently to the real part
            raise ValueError(f"{name} must be real, got complex values")
    n, y = np.asarray(n, dtype=float), np.asarray(y, dtype=float)
    weights = np.ones_like(n) if weights is None else np.asarray(weights, dtype=float)
    delta = check_real(delta, "delta", low=0.0, low_open=True)
    if n.shape != y.shape or n.shape != weights.shape or n.ndim != 1:
        raise ValueError(f"n, y and weights must be 1-D of one length, got shapes {n.shape}, "
                         f"{y.shape}, {weights.shape}")
    if np.any(n <= 0) or np.any(y <= 0) or len(np.unique(n[weights > 0])) < 3:
        raise ValueError("need at least 3 distinct positive n (with positive weight) and "
                         "positive y values")
    if np.any(weights < 0) or not np.all(np.isfinite(weights)):
        raise ValueError("weights must be finite and >= 0")
    log_n, log_y = np.log(n), np.log(y)
    theta, _, _ = _fit_offset_logs(log_n, log_y, weights, _offset_starts(log_n, log_y), delta)
    return float(np.exp(theta[0])), float(np.exp(theta[1])), float(theta[2])


@dataclass(frozen=True)
class LawFit:
    """A fitted law y ≈ E + A · N^(−α) (``law`` "offset") or y ≈ A · N^(−α) (``law`` "power",
    E = 0), with 95 % intervals from a bootstrap over seeds and points (``fit_law``).

    Attributes:
        law: "power" or "offset".
        E, A, alpha: the fit on every point (E and A in the unit of y, α dimensionless).
        E_low … alpha_high: ``INTERVAL_PERCENTILES`` of the bootstrap fits (nan without any).
        alpha_tied_low, alpha_tied_high: the range of α over the starts whose fit on every
            point ends tied with the best (``_tied_range``): α is not unique when it is wide
            (the near least-absolute-deviation offset fit); (α, α) for the power law.
        n_points, n_seeds: distinct x values and seeds fitted.
        x_min, x_max: the smallest and largest x fitted.
        rms_log_residual: root mean square of ln(prediction) − ln(mean y) over the points.
        extrapolation_error: |prediction / observed − 1| at the largest x of a fit without it
            (nan when too few points remain: fewer than ``MIN_POINTS[law]``).
        n_boot: bootstrap resamples that could be fitted (each needs ``MIN_POINTS[law]``
            distinct x values).
        samples: (n_boot, 3) float64 bootstrap fits (E, A, α), the intervals' source.
    """

    law: str
    E: float
    A: float
    alpha: float
    E_low: float
    E_high: float
    A_low: float
    A_high: float
    alpha_low: float
    alpha_high: float
    alpha_tied_low: float
    alpha_tied_high: float
    n_points: int
    n_seeds: int
    x_min: float
    x_max: float
    rms_log_residual: float
    extrapolation_error: float
    n_boot: int
    samples: np.ndarray = field(repr=False, compare=False)

    def predict(self, n) -> np.ndarray:
        """E + A · n^(−α) at sizes ``n`` (array-like, positive); float64 array of n's shape.

        Raises:
            ValueError: ``n`` not real, not finite or not positive.
        """
        from routing.validation import as_numpy

        n = as_numpy(n)
        if n.dtype == object or n.dtype.kind not in "fiu":
            raise ValueError(f"n must be real sizes, got dtype {n.dtype}")
        n = n.astype(float)
        if not (np.isfinite(n) & (n > 0)).all():
            raise ValueError("n must be finite positive sizes")
        return self.E + self.A * n ** -self.alpha

    def row(self) -> dict:
        """The fit as a dict of ``FIT_COLUMNS`` fields (without the panel's identity)."""
        return {name: getattr(self, name) for name in FIT_COLUMNS if hasattr(self, name)}


def _fit_points(law, log_n, log_y, weights, starts=None, ties: bool = False):
    """(E, A, α) of ``law`` on per-x mean logs; the offset law from ``starts`` (default: the
    grid of ``_offset_starts``). ``ties``: return ((E, A, α), (α low, α high) of the tied
    starts, ``_tied_range``; the power law's least squares has one minimiser: (α, α))."""
    if law == "power":
        w = np.sqrt(weights)
        slope, intercept = np.polyfit(log_n, log_y, 1, w=w)
        params = np.array([0.0, np.exp(intercept), -slope])
        return (params, (-slope, -slope)) if ties else params
    starts = _offset_starts(log_n, log_y) if starts is None else starts
    theta, _, tied = _fit_offset_logs(log_n, log_y, weights, starts, HUBER_DELTA)
    params = np.array([np.exp(theta[0]), np.exp(theta[1]), theta[2]])
    return (params, tied) if ties else params


def _predict_log(params, log_n):
    E, A, alpha = params
    power = np.log(A) - alpha * log_n
    return power if E <= 0 else np.logaddexp(power, np.log(E))


def fit_law(frame: pd.DataFrame, x: str, y: str = "eval_nmse", law: str = "offset",
            window=None, n_boot: int = 1000, seed: int = 0) -> LawFit:
    """Fit ``law`` to ``y`` against ``x`` on the rows inside ``window``, with a bootstrap over
    seeds and points and a leave-largest-out check of extrapolation.

    The fit uses, at each x, the mean of ln y over seeds (the geometric mean; every plotted
    point). "power" is least squares in log-log (as ``fit_log_log``); "offset" the robust fit
    of ``fit_offset_law``. Each bootstrap resample draws the seeds with replacement (all rows
    of a seed together) and, independently, the distinct x values with replacement (a point
    drawn twice weighs twice), averages ln y over the drawn seeds and refits; resamples with
    fewer than ``MIN_POINTS[law]`` distinct x values are skipped. Intervals are the
    ``INTERVAL_PERCENTILES`` (2.5, 97.5) of the refits. With one seed only points are resampled.
    The leave-largest-out check refits without the largest x and reports the relative error of
    its prediction there. A fit is kept in memory (the last ``_FITS_KEPT``), keyed on the
    table of mean ln y per (x, seed) it was made from, ``law``, ``n_boot`` and ``seed``: the
    same curve in another experiment (fig4 repeats fig2's) returns the kept ``LawFit``, whose
    ``samples`` are read-only. Source: Besiroglu et al. 2024, "Chinchilla scaling: a replication
    attempt" (robust fit, bootstrap intervals), here resampling seeds and points.

    Arguments:
        frame: rows with columns ``x``, ``y`` and ``seed`` (one model's results).
        x, y: column names (y positive; rows with y ≤ 0 or x ≤ 0 are dropped).
        law: "power" or "offset".
        window: None (all rows) or (min, max) of ``x``, ends included, None for an open end
            (``apply_fit_window``).
        n_boot: bootstrap resamples, ≥ 0.
        seed: seed of the bootstrap (same seed, same intervals).

    Returns:
        a ``LawFit``.

    Raises:
        ValueError: unknown ``law``, bad ``window``/``n_boot``/``seed``, a missing column, or
            fewer than ``MIN_POINTS[law]`` distinct x values in the window.
    """
    check_choice(law, "law", LAWS)
    n_boot = check_int(n_boot, "n_boot", low=0)
    seed = check_int(seed, "seed", low=0)
    missing = [c for c in (x, y, "seed") if c not in frame]
    if missing:
        raise ValueError(f"frame lacks column(s) {missing}; it has {list(frame.columns)}")
    rows = apply_fit_window(frame[[x, y, "seed"]], x, window).dropna()
    rows = rows[(rows[x] > 0) & (rows[y] > 0)]
    need = MIN_POINTS[law]
    if rows[x].nunique() < need:
        raise ValueError(f"the {law} law needs at least {need} distinct {x} values with "
                         f"positive {y} in window {window_text(x, window)}, got "
                         f"{rows[x].nunique()}")
    # (n_x, n_seeds) table of mean ln y; a seed missing at some x is nan there
    table = rows.assign(log_y=np.log(rows[y].astype(float))).pivot_table(
        index=x, columns="seed", values="log_y", aggfunc="mean").sort_index()
    sizes = table.index.to_numpy(dtype=float)
    logs = table.to_numpy(dtype=float)
    # everything below depends on these numbers alone: a curve that another experiment
    # fitted already (fig4 repeats 7 of fig2's offset fits) is not fitted again
    key = (law, n_boot, seed, sizes.tobytes(), logs.shape, logs.tobytes())
    with _FITS_LOCK:
        known = _FITS.get(key)
        if known is not None:
            _FITS.move_to_end(key)
            return known
    fitted = _fit_table(law, sizes, logs, n_boot, seed)
    with _FITS_LOCK:
        _FITS[key] = fitted
        if len(_FITS) > _FITS_KEPT:
            _FITS.popitem(last=False)
    return fitted


#: Fits kept by ``fit_law`` for curves fitted again (least recently used dropped first): a
#: reproduce run makes about 300; each keeps its bootstrap samples (at most 24 kB).
_FITS_KEPT = 1024
_FITS: OrderedDict = OrderedDict()
_FITS_LOCK = threading.Lock()


def _fit_table(law: str, sizes: np.ndarray, logs: np.ndarray, n_boot: int,
               seed: int) -> LawFit:
    """``fit_law`` on its (n_x, n_seeds) table ``logs`` of mean ln y over each seed's rows at
    ``sizes`` (a column per distinct seed; nan where a seed lacks a point)."""
    need = MIN_POINTS[law]
    log_n = np.log(sizes)
    log_y = np.nanmean(logs, axis=1)
    ones = np.ones_like(log_n)
    params, tied = _fit_points(law, log_n, log_y, ones, ties=True)
    residual = _predict_log(params, log_n) - log_y
    extrapolation = float("nan")
    if len(log_n) > need:
        held = _fit_points(law, log_n[:-1], log_y[:-1], ones[:-1])
        extrapolation = float(abs(np.exp(_predict_log(held, log_n[-1:])[0] - log_y[-1]) - 1))

    rng = np.random.default_rng(seed)
    n_x, n_seeds = logs.shape
    # from the full fit and from the resample's pure power law: a resample's optimum lies
    # near the full one, unless the resample has no floor
    warm = None if law == "power" else [np.array([np.log(max(params[0], 1e-300)),
                                                  np.log(params[1]), params[2]])]
    samples = []
    refits: dict[bytes, np.ndarray] = {}  # a resample drawn again is not fitted again
    for _ in range(n_boot):
        drawn_seeds = rng.integers(0, n_seeds, size=n_seeds)
        drawn_points = np.bincount(rng.integers(0, n_x, size=n_x), minlength=n_x)
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a point no drawn seed has
            means = np.nanmean(logs[:, drawn_seeds], axis=1)
        use = (drawn_points > 0) & np.isfinite(means)
        if use.sum() < need:
            continue
        # the fit depends only on the points used, their means and their weights (the
        # starts are made from these): its key
        key = use.tobytes() + means[use].tobytes() + drawn_points[use].tobytes()
        if key in refits:
            samples.append(refits[key])
            continue
        starts = None
        if warm is not None:
            # no floor: the resample's pure power law, E far below every point
            slope, intercept = np.polyfit(log_n[use], means[use], 1,
                                          w=np.sqrt(drawn_points[use]))
            starts = warm + [np.array([means[use].min() - 6.0, intercept, max(-slope, 0.0)])]
        refits[key] = _fit_points(law, log_n[use], means[use], drawn_points[use].astype(float),
                                  starts)
        samples.append(refits[key])
    samples = np.array(samples, dtype=float).reshape(-1, 3)
    samples.flags.writeable = False  # shared by every caller of a kept fit
    if len(samples):
        (e_lo, a_lo, al_lo), (e_hi, a_hi, al_hi) = np.percentile(samples, INTERVAL_PERCENTILES,
                                                                 axis=0)
    else:
        e_lo = a_lo = al_lo = e_hi = a_hi = al_hi = float("nan")
    return LawFit(law=law, E=float(params[0]), A=float(params[1]), alpha=float(params[2]),
                  E_low=float(e_lo), E_high=float(e_hi), A_low=float(a_lo), A_high=float(a_hi),
                  alpha_low=float(al_lo), alpha_high=float(al_hi),
                  alpha_tied_low=float(tied[0]), alpha_tied_high=float(tied[1]),
                  n_points=int(n_x),
                  n_seeds=int(n_seeds), x_min=float(sizes[0]),
                  x_max=float(sizes[-1]),
                  rms_log_residual=float(np.sqrt(np.mean(residual**2))),
                  extrapolation_error=extrapolation, n_boot=len(samples), samples=samples)


