"""Uniform random hashing of inputs to buckets, independent of geometry (hash routing baseline)."""

from __future__ import annotations

import numpy as np

from routing.validation import check_allocation, check_int, check_seed

from ._inputs import as_points, raise_non_finite
from ._mixer import row_buckets, seed_key

__all__ = ["UniformHash"]


class UniformHash:
    """Bucket = seeded 64-bit hash of the input's values, uniform over [0, n_buckets).

    Each input row is hashed value by value with the splitmix64 finaliser, starting from a
    key derived from ``seed`` and the row length; every entry enters as its float64 bit
    pattern after adding 0.0, so -0.0 and 0.0 are the same input and a float32 row hashes
    like the same numbers in float64. Equal rows always share a bucket; distinct rows collide
    with probability 1/n_buckets (up to 2^-63), whatever their distance.

    Arguments:
        n_buckets: number of buckets, 1..2**63 - 1.
        seed: non-negative integer; different seeds give independent-looking hashes.
        dim: expected number of columns (a row of them must fit in memory), or None (default)
            to accept any.

    Attributes:
        n_tables: always 1.
        key: the 64-bit key derived from ``seed`` (int in [0, 2**64)).

    Raises:
        ValueError: for parameters outside the ranges above.

    Source: Roller et al. 2021 (hash layers); Baykal et al. 2022, §5 Figure 4 baseline.
    """

    n_tables = 1

    def __init__(self, n_buckets: int, seed: int = 0, dim: int | None = None):
        self.n_buckets = check_int(n_buckets, "n_buckets", 1, 2**63 - 1)
        self.seed = check_seed(seed)
        self.dim = None if dim is None else check_int(dim, "dim", 1)
        if self.dim is not None:  # a row of X must fit in memory
            check_allocation(self.dim, 8, "dim", self.dim, "one float64 row of X")
        self.key = seed_key(self.seed)

    def bucket_ids(self, X) -> np.ndarray:
        """Buckets: (N, n_cols) -> (N, 1) int64 in [0, n_buckets).

        Raises:
            ValueError: if X is not a 2-D real array (with ``dim`` columns when set) or has
                NaN/inf entries.
        """
        X = as_points(X, self.dim)
        out = np.empty(len(X), np.int64)
        if len(X) and not row_buckets(X, np.uint64(self.key), self.n_buckets, out):
            raise_non_finite(X, self.dim, "unreachable: finite values always hash")
        return out[:, None]

    def to_torch(self):
        """A :class:`routing.torch_twins.TorchUniformHash` with the same key."""
        from .torch_twins import TorchUniformHash

        return TorchUniformHash.from_hasher(self)

    def __repr__(self) -> str:
        return f"UniformHash(n_buckets={self.n_buckets}, seed={self.seed}, dim={self.dim})"
