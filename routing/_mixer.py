"""Seeded 64-bit hashing of the values in each row (uniform hash routing): kernel and reference.

Each row is hashed value by value with the splitmix64 finaliser (Steele et al. 2014): the
state starts from ``key`` (a mix of the seed) and the row length, and absorbs the IEEE-754
bit pattern of each entry as float64 after adding 0.0 (so -0.0 and 0.0 are one value, and a
float32 entry hashes like the same number in float64). The bucket is (h >> 1) mod n_buckets:
the shift keeps h non-negative as an int64, which the torch twin needs; the modulo bias is at
most n_buckets / 2**63.

Reference: :func:`row_buckets_reference` (Python integers).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["splitmix64", "row_buckets", "row_buckets_reference", "seed_key",
           "GOLDEN", "MIX1", "MIX2"]

GOLDEN = 0x9E3779B97F4A7C15
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
_MASK = (1 << 64) - 1
_U_GOLDEN = np.uint64(GOLDEN)
_U_MIX1 = np.uint64(MIX1)
_U_MIX2 = np.uint64(MIX2)


@njit(cache=True)
def splitmix64(z):
    """splitmix64 of a uint64 (adds the golden ratio, then the finaliser)."""
    z = z + _U_GOLDEN
    z = (z ^ (z >> np.uint64(30))) * _U_MIX1
    z = (z ^ (z >> np.uint64(27))) * _U_MIX2
    return z ^ (z >> np.uint64(31))


def seed_key(seed: int) -> int:
    """The 64-bit key of a seed (Python int in [0, 2**64))."""
    return _splitmix64_py(seed & _MASK)


@njit(cache=True, parallel=True)
def row_buckets(X, key, n_buckets, out):
    """out[i] = bucket of row i of X; return True iff every entry of X is finite.

    Arguments:
        X: (N, n_cols) float32 or float64, C-contiguous.
        key: uint64 from :func:`seed_key`.
        n_buckets: int64 >= 1.
        out: (N,) int64, overwritten.
    """
    n, n_cols = X.shape
    start = splitmix64(key ^ np.uint64(n_cols))
    m = np.uint64(n_buckets)
    n_spans = (n + 1023) // 1024
    n_bad = 0
    for span in prange(n_spans):
        value = np.empty(1, np.float64)
        bits = value.view(np.uint64)
        for i in range(span * 1024, min(n, (span + 1) * 1024)):
            h = start
            for j in range(n_cols):
                v = np.float64(X[i, j]) + 0.0
                if v - v != 0:
                    n_bad += 1
                value[0] = v
                h = splitmix64(h ^ bits[0])
            out[i] = np.int64((h >> np.uint64(1)) % m)
    return n_bad == 0


def _splitmix64_py(z: int) -> int:
    z = (z + GOLDEN) & _MASK
    z = ((z ^ (z >> 30)) * MIX1) & _MASK
    z = ((z ^ (z >> 27)) * MIX2) & _MASK
    return z ^ (z >> 31)


def row_buckets_reference(X: np.ndarray, seed: int, n_buckets: int) -> np.ndarray:
    """Plain-Python reference of :func:`row_buckets` -> (N,) int64."""
    X = np.asarray(X)
    start = _splitmix64_py(seed_key(seed) ^ X.shape[1])
    out = np.empty(len(X), np.int64)
    for i, row in enumerate(X.astype(np.float64) + 0.0):
        h = start
        for b in row.view(np.uint64).tolist():
            h = _splitmix64_py(h ^ b)
        out[i] = (h >> 1) % n_buckets
    return out
