"""Which rows a scaling fit may use: the sample condition of Baykal et al. 2022, Theorem 4.1
(n_train ≥ k·T·ln T for a table of T non-empty buckets) and the geometry window a panel's
``window_rule`` states (buckets small against the input's extent, few evaluation points in
empty buckets). The subspace experiment (``experiments.papers.subspace_sweep``) pre-registers its
rule here; any config's panel may carry one (``ExperimentConfig.panels[...]["window_rule"]``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from routing.validation import as_numpy, check_int, check_real


#: Lower end of the fit window: the buckets' spread ratio ρ (squared RMS bucket radius over
#: Γ's) at most 1/4, i.e. buckets at most half Γ's RMS extent.
SPREAD_RATIO_MAX = 0.25


#: Upper end: at most this fraction of evaluation points in buckets without training points…
EMPTY_FRACTION_MAX = 0.01


#: …and those points carry at most this share of the identity map's partition error.
EMPTY_SHARE_MAX = 0.10


#: The window rule a subspace panel carries (``ExperimentConfig.panels[...]["window_rule"]``,
#: written to config.json).
WINDOW_RULE = {"spread_ratio_max": SPREAD_RATIO_MAX, "empty_fraction_max": EMPTY_FRACTION_MAX,
               "empty_share_max": EMPTY_SHARE_MAX}


#: Columns ``bucket_geometry`` adds to a results row.
GEOMETRY_COLUMNS = ["spread_ratio", "empty_fraction", "empty_share"]


def sample_regime_max_buckets(k: int, n_train: int) -> float:
    """The largest T with k·T·ln T ≤ n_train (Theorem 4.1's sample condition with constant 1):
    T = c / W(c) with c = n_train / k and W the Lambert W function. Float ≥ 1.

    Raises:
        ValueError: k < 1 or n_train < 1.
    """
    from scipy.special import lambertw

    k, n_train = check_int(k, "k", low=1), check_int(n_train, "n_train", low=1)
    c = n_train / k
    return float(max(1.0, c / lambertw(c).real))


def window_mask(rows: pd.DataFrame, rule: dict, k: int, n_train: int) -> np.ndarray:
    """Which rows lie in the subspace fit window: ``in_sample_regime`` (n_train ≥ k·T·ln T),
    spread_ratio ≤ rule["spread_ratio_max"], empty_fraction ≤ rule["empty_fraction_max"] and
    empty_share ≤ rule["empty_share_max"].

    Arguments:
        rows: results rows with ``buckets`` and the ``GEOMETRY_COLUMNS`` (``with_geometry``).
        rule: the panel's ``window_rule`` (e.g. ``WINDOW_RULE``).
        k, n_train: the subspace dimension and the training sample size.

    Returns:
        (len(rows),) bool array; rows with a missing value are out.

    Raises:
        ValueError: a geometry column is missing (call ``with_geometry`` first), or a bound of
            ``rule`` missing or not a real number.
    """
    missing = [c for c in GEOMETRY_COLUMNS if c not in rows]
    if missing:
        raise ValueError(f"the subspace window needs columns {missing}: add them with "
                         f"experiments.papers.subspace_sweep.with_geometry")
    bounds = _rule_bounds(rule)
    keep = np.asarray(in_sample_regime(rows["buckets"].fillna(np.inf), k, n_train))
    for column, bound in bounds.items():
        values = rows[column].to_numpy(dtype=float)
        keep &= np.nan_to_num(values, nan=np.inf) <= bound
    return keep


def _rule_bounds(rule: dict) -> dict[str, float]:
    """The bounds of a window rule, by geometry column: each a finite real >= 0."""
    if not isinstance(rule, dict):
        raise ValueError(f"rule must be a dict like WINDOW_RULE, got {rule!r}")
    return {c: check_real(rule.get(f"{c}_max"), f"window_rule[{c}_max]", 0.0)
            for c in GEOMETRY_COLUMNS}


def window_text(rule: dict, k: int) -> str:
    """The window rule in words, as fits.csv and the report write it.

    Raises:
        ValueError: a bound of ``rule`` missing or not a finite real >= 0; ``k`` not an
            integer >= 1.
    """
    check_int(k, "k", low=1)
    _rule_bounds(rule)
    return (f"n_train >= k*T*ln(T) (k = {k}); spread_ratio <= {rule['spread_ratio_max']:g}; "
            f"empty_fraction <= {rule['empty_fraction_max']:g}; "
            f"empty_share <= {rule['empty_share_max']:g}")


def in_sample_regime(buckets, k: int, n_train: int):
    """The sample condition of Theorem 4.1 with constant 1: n_train ≥ k · T · ln T for a table
    of T non-empty buckets. Outside it most buckets hold a handful of points and the error is
    estimation noise, not the approximation error the theorem's exponent describes.

    Arguments:
        buckets: array-like of T (float; inf or nan never satisfy it).
        k, n_train: subspace dimension and training sample size.

    Returns:
        bool array of buckets' shape.

    Raises:
        ValueError: ``buckets`` not real-valued; ``k`` or ``n_train`` not an integer >= 1.
    """
    k = check_int(k, "k", 1)
    n_train = check_int(n_train, "n_train", 1)
    buckets = as_numpy(buckets)
    if buckets.dtype == object or buckets.dtype.kind not in "fiub":
        raise ValueError(f"buckets must be real numbers, got dtype {buckets.dtype}")
    buckets = buckets.astype(float)
    with np.errstate(invalid="ignore"):
        return k * buckets * np.log(np.maximum(buckets, 2.0)) <= n_train
