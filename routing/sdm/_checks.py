"""Argument checks shared by the SDM calculators (Hamming quantities, weightings, β)."""

from __future__ import annotations

import numbers

import numpy as np

from routing.validation import as_numpy, check_int, check_real

# Canonical weighting names of Bricken et al. 2023, App. A.7, Eqs. 7-9, and accepted aliases.
WEIGHTINGS = ("binary", "linear", "exponential")
_ALIASES = {"binary": "binary", "linear": "linear", "exponential": "exponential", "exp": "exponential"}


def check_weighting(weighting, beta):
    """Return ``(weighting, beta)`` in canonical form: the neuron weightings of Bricken et al.
    2023, App. A.7 (binary, linear, exponential; "exp" is read as "exponential").

    ``beta`` is required (a finite real >= 0, the exponential weighting's inverse temperature per
    unit of Hamming distance) for the exponential weighting and must be ``None`` for the others,
    so that a β given to the wrong weighting is never ignored silently.

    Arguments:
        weighting: "binary", "linear", "exponential" or "exp" (str).
        beta: a real >= 0 for "exponential", None otherwise.

    Returns:
        ``(weighting, beta)``: the canonical name (str) and β as a float (or None).

    Raises:
        ValueError: an unknown weighting, β missing for the exponential weighting, β given to
            another weighting, or β negative, infinite or NaN.
    """
    if not isinstance(weighting, str) or weighting not in _ALIASES:
        raise ValueError(
            f"weighting must be one of 'binary', 'linear', 'exponential' (or 'exp'), got {weighting!r}"
        )
    weighting = _ALIASES[weighting]
    if weighting == "exponential":
        if beta is None:
            raise ValueError(
                "beta must be a finite real number in [0, inf) for the exponential weighting, got None"
            )
        beta = check_real(beta, "beta", 0.0, None)
    elif beta is not None:
        raise ValueError(
            f"beta must be None for the {weighting} weighting (it is used by 'exponential' only), got {beta!r}"
        )
    return weighting, beta


def check_hamming(value, name: str, n: int):
    """Check one Hamming quantity or an array of them: integers in ``[0, n]``.

    Returns ``(array, is_scalar)`` with ``array`` an int64 ndarray (0-d for a scalar).
    """
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return np.asarray(check_int(value, name, 0, n), dtype=np.int64), True
    arr = as_numpy(value)
    if arr.ndim == 0:
        # a 0-d array or a float/bool scalar: check_int gives the uniform error message.
        return np.asarray(check_int(arr.item(), name, 0, n), dtype=np.int64), True
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be an integer or an array of integers in [0, {n}], got dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() > n):
        bad = arr[(arr < 0) | (arr > n)].flat[0]
        raise ValueError(f"{name} must be an integer or an array of integers in [0, {n}], got {bad}")
    return arr.astype(np.int64), False


def check_cosine(value, name: str):
    """Check a cosine (or an array of them): finite reals in ``[-1, 1]``.

    Returns ``(array, is_scalar)`` with ``array`` a float64 ndarray (0-d for a scalar).
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return np.asarray(check_real(value, name, -1.0, 1.0)), True
    arr = as_numpy(value)
    if arr.ndim == 0:
        return np.asarray(check_real(arr.item(), name, -1.0, 1.0)), True
    real = np.issubdtype(arr.dtype, np.floating) or np.issubdtype(arr.dtype, np.integer)
    if arr.dtype == np.bool_ or not real:
        raise ValueError(f"{name} must be a real number or an array of reals in [-1, 1], got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr) | (arr < -1.0) | (arr > 1.0)
    if bad.any():
        raise ValueError(f"{name} must be a finite real number in [-1, 1], got {arr[bad].flat[0]}")
    return arr, False
