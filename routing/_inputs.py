"""Cheap input checks for the hashers: shape and dtype here, finiteness inside the kernels.

``routing.validation.check_points`` builds an (N, dim) boolean temporary to test
finiteness; for 10⁶ × 64 inputs that alone is eight times the size of the hash output. The
hashers therefore check shape and dtype here and let each kernel test the finiteness of what
it computes (every projection, rotation or element it reads): a non-finite input always
yields a non-finite projection, so nothing is missed, and the error is then re-raised with
``check_points``'s message (see :func:`raise_non_finite`).
"""

from __future__ import annotations

import numpy as np

from routing.validation import check_points

__all__ = ["as_points", "raise_non_finite"]


def as_points(X, dim: int | None, name: str = "X") -> np.ndarray:
    """Return ``X`` as a C-contiguous float32 or float64 array of shape (N, dim).

    float32 and float64 inputs keep their dtype (no upcast, no copy when already
    C-contiguous); integer and boolean inputs become float64.

    Raises:
        ValueError: if ``X`` is not a real-valued 2-D array with ``dim`` columns.
    """
    return check_points(X, dim, name=name, dtype=None, check_finite=False)


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
