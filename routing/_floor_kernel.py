"""Euclidean (p-stable) LSH codes h_i(x) = floor((a_i · x + b_i) / width): kernel and reference.

Datar et al. 2004; Baykal et al. 2022, §2.2. The projection a_i · x is computed in X's dtype
(see ``_projection`` for the blocking); the offset, the division and the floor are done in
float64. A code must satisfy |(a_i · x + b_i) / width| < 2**62, so that it is an exact int64
far from overflow; otherwise (or for a non-finite projection) the kernel reports failure.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._projection import BLOCK, LANES, project_block, project_reference

__all__ = ["floor_codes", "floor_codes_reference", "CODE_LIMIT"]

CODE_LIMIT = 2.0**62
SPAN = 32  # blocks of points per parallel task


@njit(cache=True, parallel=True)
def floor_codes(X, groups, offsets, width, out):
    """Write the integer codes of X into ``out``; return True iff all are finite and in range.

    Arguments:
        X: (N, dim) float32 or float64, C-contiguous.
        groups: (n_tables · G, dim, LANES) directions from ``pack_groups``, in X's dtype;
            table t owns groups t·G .. t·G + G - 1, G = ceil(n_hashes / LANES).
        offsets: (n_tables, n_hashes) float64, the b_i.
        width: float64 > 0.
        out: (N, n_tables, n_hashes) int64, overwritten.
    """
    n = X.shape[0]
    n_tables, n_hashes = offsets.shape
    per_table = groups.shape[0] // n_tables
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_bad = 0
    for span in prange((n_blocks + SPAN - 1) // SPAN):
        dots = np.empty((BLOCK, LANES), X.dtype)
        for block in range(span * SPAN, min(n_blocks, (span + 1) * SPAN)):
            first = block * BLOCK
            for t in range(n_tables):
                for g in range(per_table):
                    project_block(X, first, groups, t * per_table + g, dots, 0)
                    for q in range(min(BLOCK, n - first)):
                        for i in range(min(LANES, n_hashes - g * LANES)):
                            u = (np.float64(dots[q, i]) + offsets[t, g * LANES + i]) / width
                            if not abs(u) < CODE_LIMIT:  # NaN fails too
                                n_bad += 1
                                u = 0.0
                            out[first + q, t, g * LANES + i] = np.int64(np.floor(u))
    return n_bad == 0


def floor_codes_reference(X: np.ndarray, directions: np.ndarray, offsets: np.ndarray,
                          width: float) -> np.ndarray:
    """Plain numpy reference: -> (N, n_tables, n_hashes) int64 (projection in X's dtype)."""
    proj = project_reference(X, directions).astype(np.float64)
    return np.floor((proj + offsets) / width).astype(np.int64)
