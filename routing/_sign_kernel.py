"""Packed sign patterns of projections (hyperplane LSH keys): Numba kernel and numpy reference.

Key of point x in table t: bit i is 1 iff directions[t, i] · x >= 0 (Charikar 2002; the
LSH(d, s, m) model of Baykal et al. 2022, §2.2). See ``_projection`` for the blocking.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._projection import GROUP, project_reference

__all__ = ["packed_signs", "packed_signs_reference"]


@njit(cache=True, fastmath={"contract", "reassoc"})
def _signs_8x2(x, y, A, zero):
    """Sign bits of A[0:8] · x and A[0:8] · y as two 8-bit ints, and whether all 16 are finite."""
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
    kx = (np.int64(s0 >= 0) | np.int64(s1 >= 0) << 1 | np.int64(s2 >= 0) << 2
          | np.int64(s3 >= 0) << 3 | np.int64(s4 >= 0) << 4 | np.int64(s5 >= 0) << 5
          | np.int64(s6 >= 0) << 6 | np.int64(s7 >= 0) << 7)
    ky = (np.int64(t0 >= 0) | np.int64(t1 >= 0) << 1 | np.int64(t2 >= 0) << 2
          | np.int64(t3 >= 0) << 3 | np.int64(t4 >= 0) << 4 | np.int64(t5 >= 0) << 5
          | np.int64(t6 >= 0) << 6 | np.int64(t7 >= 0) << 7)
    # s - s is 0 for a finite s and NaN for NaN or +-inf; the sum cannot overflow.
    nan = ((s0 - s0) + (s1 - s1) + (s2 - s2) + (s3 - s3) + (s4 - s4) + (s5 - s5)
           + (s6 - s6) + (s7 - s7) + (t0 - t0) + (t1 - t1) + (t2 - t2) + (t3 - t3)
           + (t4 - t4) + (t5 - t5) + (t6 - t6) + (t7 - t7))
    return kx, ky, nan == 0


@njit(cache=True, parallel=True)
def packed_signs(X, A, n_bits, zero, out):
    """Write the packed sign keys of X into ``out``; return True iff every projection is finite.

    Arguments:
        X: (N, dim) float32 or float64, C-contiguous.
        A: (n_tables, rows, dim) directions padded to rows = multiple of 8 (``pad_groups``),
            in X's dtype.
        n_bits: bits per key, 1..64; bit 63 makes the int64 key negative.
        zero: 0 in X's dtype (starts the accumulators in that precision).
        out: (N, n_tables) int64, overwritten.
    """
    n = X.shape[0]
    n_tables, rows, _ = A.shape
    mask = np.int64(-1) if n_bits == 64 else (np.int64(1) << n_bits) - 1
    n_pairs = (n + 1) // 2
    n_bad = 0
    for pair in prange(n_pairs):
        p = 2 * pair
        q = min(p + 1, n - 1)  # an odd last point is paired with itself
        ok = True
        for t in range(n_tables):
            kp = np.int64(0)
            kq = np.int64(0)
            for r0 in range(0, rows, GROUP):
                gp, gq, finite = _signs_8x2(X[p], X[q], A[t, r0:r0 + GROUP], zero)
                ok &= finite
                kp |= gp << r0
                kq |= gq << r0
            out[p, t] = kp & mask
            out[q, t] = kq & mask
        if not ok:
            n_bad += 1
    return n_bad == 0


def packed_signs_reference(X: np.ndarray, directions: np.ndarray) -> np.ndarray:
    """Plain numpy reference: (N, dim) X, (n_tables, n_bits, dim) directions -> (N, n_tables) int64."""
    n_bits = directions.shape[1]
    bits = (project_reference(X, directions) >= 0).astype(np.uint64)  # (N, n_tables, n_bits)
    keys = (bits << np.arange(n_bits, dtype=np.uint64)).sum(axis=2, dtype=np.uint64)
    return keys.view(np.int64)
