"""Fast pseudo-random rotations (sign flips + Walsh–Hadamard) and cross-polytope hashes.

Andoni et al. 2015, §5 (and FALCONN): a point x in R^dim is zero-padded to D = the next power
of two and rotated by y = H D3 H D2 H D1 x, where the D_k are diagonal ±1 matrices and H is
the unnormalised Walsh–Hadamard matrix (Sylvester order, as ``scipy.linalg.hadamard``). The
hash value is 2·i + (y_i < 0) for the coordinate i of largest |y_i|, one of 2·D values. The
scale of H does not change the argmax, so no normalisation is applied.

Ties: with zero-padding, two coordinates of y can be the same linear function of x (the
entries of H D3 H D2 H D1 take few values), so exact ties are structural, not rare, and
rounding alone would decide them. The winner is therefore the lowest i with
|y_i| >= (1 - TIE_TOL[dtype]) · max_j |y_j|, which is stable under rounding (and under positive
scaling of x) except for genuine near-ties at the tolerance edge.

Reference: :func:`rotate_reference` and :func:`cross_polytope_reference` (dense matrices).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["fwht", "cross_polytope_codes", "rotate_reference", "cross_polytope_reference",
           "TIE_TOL"]

# relative tolerance of the argmax: well above the rounding error of three transforms of
# size up to 2**20, well below the gaps between distinct coordinates that matter
TIE_TOL = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}


@njit(cache=True)
def fwht(v):
    """In-place unnormalised fast Walsh–Hadamard transform of ``v`` (length a power of two)."""
    n = v.shape[0]
    h = 1
    while h < n:
        for i in range(0, n, 2 * h):
            for j in range(i, i + h):
                a = v[j]
                b = v[j + h]
                v[j] = a + b
                v[j + h] = a - b
        h *= 2


@njit(cache=True, parallel=True)
def cross_polytope_codes(X, signs, tie_tol, out):
    """Write the cross-polytope hash values of X into ``out``; return True iff all are finite.

    Arguments:
        X: (N, dim) float32 or float64, C-contiguous.
        signs: (n_tables, n_rotations, 3, D) ±1 in X's dtype, D a power of two >= dim.
        tie_tol: relative tolerance of the argmax (``TIE_TOL[X.dtype]``).
        out: (N, n_tables, n_rotations) int64 in [0, 2D), overwritten.
    """
    n, dim = X.shape
    n_tables, n_rot, _, size = signs.shape
    n_spans = (n + 255) // 256
    n_bad = 0
    for span in prange(n_spans):
        y = np.empty(size, X.dtype)
        for p in range(span * 256, min(n, (span + 1) * 256)):
            x = X[p]
            for t in range(n_tables):
                for r in range(n_rot):
                    s = signs[t, r]
                    for j in range(dim):
                        y[j] = x[j] * s[0, j]
                    y[dim:] = 0
                    fwht(y)
                    for k in range(1, 3):
                        for j in range(size):
                            y[j] *= s[k, j]
                        fwht(y)
                    top = abs(y[0])
                    finite = y[0] - y[0] == 0
                    for j in range(1, size):
                        top = max(top, abs(y[j]))
                        finite &= y[j] - y[j] == 0
                    if not finite:
                        n_bad += 1
                    threshold = top * (1 - tie_tol)
                    best = 0
                    while abs(y[best]) < threshold:
                        best += 1
                    out[p, t, r] = 2 * best + (1 if y[best] < 0 else 0)
    return n_bad == 0


def rotate_reference(X: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Dense reference rotation: (N, dim) X, (3, D) signs -> (N, D) H D3 H D2 H D1 [x, 0]."""
    from scipy.linalg import hadamard

    size = signs.shape[-1]
    H = hadamard(size).astype(X.dtype)
    y = np.zeros((len(X), size), X.dtype)
    y[:, : X.shape[1]] = X
    for k in range(3):
        y = (y * signs[k].astype(X.dtype)) @ H  # H is symmetric
    return y


def cross_polytope_reference(X: np.ndarray, signs: np.ndarray) -> np.ndarray:
    """Reference hash values: (N, dim) X, (n_tables, n_rotations, 3, D) signs -> (N, n_tables, n_rotations)."""
    n_tables, n_rot = signs.shape[:2]
    out = np.empty((len(X), n_tables, n_rot), np.int64)
    for t in range(n_tables):
        for r in range(n_rot):
            y = np.abs(rotate_reference(X, signs[t, r]))
            near_top = y >= (1 - TIE_TOL[X.dtype]) * y.max(axis=1, keepdims=True)
            best = np.argmax(near_top, axis=1)  # the first index within the tolerance
            y = rotate_reference(X, signs[t, r])
            negative = y[np.arange(len(X)), best] < 0
            out[:, t, r] = 2 * best + negative
    return out
