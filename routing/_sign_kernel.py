"""Packed sign patterns of projections (hyperplane LSH keys): Numba kernel and numpy reference.

Key of point x in table t: bit i is 1 iff directions[t, i] · x >= 0 (Charikar 2002; the
LSH(d, s, m) model of Baykal et al. 2022, §2.2). The projections and their signs come from
the register-blocked :func:`~routing._projection.sign_block`.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._projection import BLOCK, LANES, project_reference, sign_block

__all__ = ["packed_signs", "packed_signs_reference"]

SPAN = 64  # blocks of points per parallel task


@njit(cache=True, parallel=True)
def packed_signs(X, groups, n_tables, n_bits, out):
    """Write the packed sign keys of X into ``out``; return True iff every projection is finite.

    Arguments:
        X: (N, dim) float32 or float64, C-contiguous.
        groups: (n_tables · G, dim, LANES) directions from ``pack_groups``, in X's dtype;
            table t owns groups t·G .. t·G + G - 1, G = ceil(n_bits / LANES).
        n_tables: number of tables.
        n_bits: bits per key, 1..64; bit 63 makes the int64 key negative.
        out: (N, n_tables) int64, overwritten.
    """
    n = X.shape[0]
    per_table = groups.shape[0] // n_tables
    mask = np.int64(-1) if n_bits == 64 else (np.int64(1) << n_bits) - 1
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_bad = 0
    for span in prange((n_blocks + SPAN - 1) // SPAN):
        keys = np.empty(BLOCK, np.int64)
        for block in range(span * SPAN, min(n_blocks, (span + 1) * SPAN)):
            first = block * BLOCK
            finite = True
            for t in range(n_tables):
                keys[:] = 0
                for g in range(per_table):
                    signs = sign_block(X, first, groups, t * per_table + g)
                    finite &= signs[BLOCK] == 1
                    for q in range(BLOCK):
                        keys[q] |= signs[q] << (g * LANES)
                for q in range(min(BLOCK, n - first)):
                    out[first + q, t] = keys[q] & mask
            if not finite:
                n_bad += 1
    return n_bad == 0


def packed_signs_reference(X: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Plain numpy reference: (N, dim) X, (n_tables, n_bits, dim) directions -> (N, n_tables) int64."""
    n_bits = directions.shape[1]
    bits = (project_reference(X, directions) >= 0).astype(np.uint64)  # (N, n_tables, n_bits)
    keys = (bits << np.arange(n_bits, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    return keys.view(np.int64)
