"""Euclidean (p-stable) LSH codes h_i(x) = floor((a_i · x + b_i) / width): kernel and reference.

Datar et al. 2004; Baykal et al. 2022, §2.2. The projection a_i · x is computed in X's dtype
(see ``_projection`` for the blocking); the offset, the division and the floor are done in
float64. A code must satisfy |(a_i · x + b_i) / width| < 2**62, so that it is an exact int64
far from overflow; otherwise (or for a non-finite projection) the kernel reports failure.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._projection import GROUP, project_reference

__all__ = ["floor_codes", "floor_codes_reference", "CODE_LIMIT"]

CODE_LIMIT = 2.0**62


@njit(cache=True, fastmath={"contract", "reassoc"})
def _dots_8x2(x, y, A, zero, out):
    """out[0, i] = A[i] · x and out[1, i] = A[i] · y for i < 8 (float64 (2, 8) scratch)."""
    a0, a1, a2, a3, a4, a5, a6, a7 = A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = zero
    t0 = t1 = t2 = t3 = t4 = t5 = t6 = t7 = zero
    for j in range(x.shape[0]):  # vectorised reductions over the input coordinates
        u = x[j]
        v = y[j]
        s0 += u * a0[j]
        s1 += u * a1[j]
        s2 += u * a2[j]
        s3 += u * a3[j]
        s4 += u * a4[j]
        s5 += u * a5[j]
        s6 += u * a6[j]
        s7 += u * a7[j]
        t0 += v * a0[j]
        t1 += v * a1[j]
        t2 += v * a2[j]
        t3 += v * a3[j]
        t4 += v * a4[j]
        t5 += v * a5[j]
        t6 += v * a6[j]
        t7 += v * a7[j]
    out[0, 0], out[0, 1], out[0, 2], out[0, 3] = s0, s1, s2, s3
    out[0, 4], out[0, 5], out[0, 6], out[0, 7] = s4, s5, s6, s7
    out[1, 0], out[1, 1], out[1, 2], out[1, 3] = t0, t1, t2, t3
    out[1, 4], out[1, 5], out[1, 6], out[1, 7] = t4, t5, t6, t7


@njit(cache=True, parallel=True)
def floor_codes(X, A, offsets, width, zero, out):
    """Write the integer codes of X into ``out``; return True iff all are finite and in range.

    Arguments:
        X: (N, dim) float32 or float64, C-contiguous.
        A: (n_tables, rows, dim) directions padded to a multiple of 8 rows (``pad_groups``),
            in X's dtype.
        offsets: (n_tables, n_hashes) float64, the b_i.
        width: float64 > 0.
        zero: 0 in X's dtype.
        out: (N, n_tables, n_hashes) int64, overwritten.
    """
    n = X.shape[0]
    n_tables, rows, _ = A.shape
    n_hashes = offsets.shape[1]
    n_pairs = (n + 1) // 2
    n_spans = (n_pairs + 255) // 256
    n_bad = 0
    for span in prange(n_spans):
        dots = np.empty((2, GROUP), np.float64)
        for pair in range(span * 256, min(n_pairs, (span + 1) * 256)):
            p = 2 * pair
            q = min(p + 1, n - 1)  # an odd last point is paired with itself
            for t in range(n_tables):
                for r0 in range(0, rows, GROUP):
                    _dots_8x2(X[p], X[q], A[t, r0:r0 + GROUP], zero, dots)
                    for i in range(min(GROUP, n_hashes - r0)):
                        b = offsets[t, r0 + i]
                        u = (dots[0, i] + b) / width
                        v = (dots[1, i] + b) / width
                        if not (abs(u) < CODE_LIMIT and abs(v) < CODE_LIMIT):  # NaN fails too
                            n_bad += 1
                            u = 0.0
                            v = 0.0
                        out[p, t, r0 + i] = np.int64(np.floor(u))
                        out[q, t, r0 + i] = np.int64(np.floor(v))
    return n_bad == 0


def floor_codes_reference(X: np.ndarray, directions: np.ndarray, offsets: np.ndarray,
                          width: float) -> np.ndarray:
    """Plain numpy reference: -> (N, n_tables, n_hashes) int64 (projection in X's dtype)."""
    proj = project_reference(X, directions).astype(np.float64)
    return np.floor((proj + offsets) / width).astype(np.int64)
