"""Cheap input checks for the hashers: shape and dtype here, finiteness inside the kernels.

``lipschitz.validation.check_points`` builds an (N, dim) boolean temporary to test
finiteness; for 10⁶ × 64 inputs that alone is eight times the size of the hash output. The
hashers therefore check shape and dtype here and let each kernel test the finiteness of what
it computes (every projection, rotation or element it reads): a non-finite input always
yields a non-finite projection, so nothing is missed, and the error is then re-raised with
``check_points``'s message (see :func:`raise_non_finite`).
"""

from __future__ import annotations

import numpy as np

from lipschitz.validation import check_points

__all__ = ["as_points", "raise_non_finite"]


def as_points(X, dim: int | None, name: str = "X") -> np.ndarray:
    """Return ``X`` as a C-contiguous float32 or float64 array of shape (N, dim).

    float32 and float64 inputs keep their dtype (no upcast, no copy when already
    C-contiguous); integer and boolean inputs become float64.

    Raises:
        ValueError: if ``X`` is not a real-valued 2-D array with ``dim`` columns.
    """
    arr = np.asarray(X)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.floating)
        or np.issubdtype(arr.dtype, np.integer)
        or arr.dtype == np.bool_
    ):
        raise ValueError(f"{name} must be a real-valued array, got dtype {arr.dtype}")
    expected = "(N, n_inputs)" if dim is None else f"(N, {dim})"
    if arr.ndim != 2 or (dim is not None and arr.shape[1] != dim):
        raise ValueError(f"{name} must have shape {expected}, got shape {arr.shape}")
    dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    return np.ascontiguousarray(arr, dtype=dtype)


def raise_non_finite(X: np.ndarray, dim: int | None, reason: str, name: str = "X"):
    """Raise the ValueError for a kernel that met a non-finite or out-of-range value.

    Either ``X`` has NaN/inf entries (``check_points``'s message) or a finite ``X`` is so large
    that an intermediate overflowed; ``reason`` says which, e.g. "a projection a·x overflows
    float32".
    """
    check_points(X, dim, name=name, dtype=None)
    raise ValueError(
        f"{name} is too large: {reason} (largest |entry| of {name} is "
        f"{float(np.max(np.abs(X))):.3g}); rescale {name}"
    )
