"""Layout of the directions for the register-blocked projection kernels.

Both the hyperplane and the Euclidean hash spend almost all their time in ``X @ A.T`` on a
skinny shape (64 inputs, 16 outputs). Their Numba kernels (``_sign_kernel``,
``_floor_kernel``) compute the projections of two points onto a group of ``GROUP``
directions in one pass over the inputs: 16 scalar accumulators that LLVM turns into vector
reductions over the input coordinates, so every coordinate of x is loaded once per group and
every direction coordinate once per pair of points. X is read row by row, as stored: no
transposed copy, no (N, n_rows) float matrix. The directions are padded with zero rows to a
multiple of ``GROUP`` per table; padded rows project to exactly 0 and are masked out.

Reference for the kernels: :func:`project_reference`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GROUP", "pad_groups", "project_reference"]

GROUP = 8  # directions per pass of a kernel


def pad_groups(directions: np.ndarray, dtype) -> np.ndarray:
    """(n_tables, R, dim) directions -> (n_tables, ceil(R/GROUP)·GROUP, dim), zero rows appended.

    The result is C-contiguous in ``dtype`` (the dtype of the points it will be applied to).
    """
    n_tables, n_rows, dim = directions.shape
    rows = -(-n_rows // GROUP) * GROUP
    out = np.zeros((n_tables, rows, dim), dtype=dtype)
    out[:, :n_rows] = directions
    return out


def project_reference(X: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Plain numpy reference: (N, dim) X, (n_tables, R, dim) directions -> (N, n_tables, R).

    Computed in X's dtype, like the kernels.
    """
    n_tables, n_rows, dim = directions.shape
    proj = X @ directions.reshape(-1, dim).astype(X.dtype).T
    return proj.reshape(len(X), n_tables, n_rows)
