"""Argument checks of the statistics module.

The module sits below every other sparselab package, so it keeps its own small checks instead
of importing ``routing.validation``. Every error names the parameter and its allowed range.
"""

from __future__ import annotations

import numbers

import numpy as np

ALTERNATIVES = ("two-sided", "greater", "less")


def check_confidence(confidence, name: str = "confidence") -> float:
    """``confidence`` as a float in the open interval (0, 1); ValueError otherwise."""
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real):
        raise ValueError(f"{name} must be a real number in (0, 1), got {confidence!r}")
    value = float(confidence)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be a real number in (0, 1), got {value!r}")
    return value


def check_alternative(alternative, name: str = "alternative") -> str:
    """``alternative`` if it is one of 'two-sided', 'greater', 'less'; ValueError otherwise."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"{name} must be one of {ALTERNATIVES}, got {alternative!r}")
    return alternative


def check_counts(value, name: str, low=0, high=None, high_name: str = "") -> np.ndarray:
    """``value`` as an int64 array after checking every entry is an integer in [low, high].

    Integer dtypes and floats with integral values are accepted; bools, NaN and fractions are
    not. ``high`` may be an array broadcastable with ``value`` (named ``high_name`` in the
    error).
    """
    arr = np.asarray(value)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be integer counts, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"{name} must be integer counts, got non-integral values")
    arr = arr.astype(np.int64)
    upper = "" if high is None else f", {name} <= {high_name if np.ndim(high) else int(high)}"
    bad = arr < low
    if high is not None:
        bad = bad | (arr > high)
    if np.any(bad):
        raise ValueError(f"{name} must be integers >= {low}{upper}; got "
                         f"{np.broadcast_to(arr, np.shape(bad))[bad].ravel()[0]}")
    return arr


def check_finite_vector(values, name: str, min_size: int = 0) -> np.ndarray:
    """``values`` as a 1-D float64 array of finite numbers with at least ``min_size`` entries."""
    arr = np.asarray(values)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.integer)
                                 or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name} must be real numbers, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} values, got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {arr[~np.isfinite(arr)][0]!r}")
    return arr
