"""Euclidean (p-stable) LSH with exact bucket keys: the Euclidean LSH model of Baykal et al. §2.2.

Datar et al. 2004: h_i(x) = floor((a_i · x + b_i) / width) with a_i ~ N(0, I_dim) and
b_i ~ U[0, width). Two points at distance u collide in one hash with probability
p(u) = 1 − 2Φ(−w/u) − (2u/(√(2π) w))(1 − exp(−w²/(2u²))), and in a whole key with p(u)^n_hashes.
"""

from __future__ import annotations

import numpy as np

from routing.validation import (check_allocation, check_array_memory, check_bool, check_int,
                                check_real, check_seed)

from ._codebook import Codebook
from ._floor_kernel import floor_codes
from ._inputs import as_points, raise_non_finite
from ._projection import pack_groups

__all__ = ["EuclideanLSH"]

CHUNK = 16384  # points per call of the codebook: bounds the scratch to CHUNK·n_tables·n_hashes int64


class EuclideanLSH:
    """``n_tables`` independent tables of ``n_hashes`` Euclidean hashes of width ``width``.

    Arguments:
        dim: input dimension d, >= 1.
        n_hashes: hashes per table (m' in the paper), >= 1.
        width: bucket width w (ε in the paper), a finite real > 0, in the units of X.
        n_tables: number of independent tables, >= 1.
        seed: non-negative integer; the same seed gives the same directions and offsets.

    Attributes:
        directions: (n_tables, n_hashes, dim) float64, i.i.d. N(0, 1), read-only.
        offsets: (n_tables, n_hashes) float64, i.i.d. U[0, width), read-only.
            Both are drawn from ``numpy.random.default_rng(seed)``: first ``directions`` with
            ``standard_normal``, then ``offsets`` with ``uniform(0, width)``.

    Bucket keys (:meth:`bucket_ids`) are exact: each table keeps a codebook that gives every
    distinct integer vector (h_1(x), ..., h_n_hashes(x)) the next free int64 id, in the order
    the vectors are first seen. Two points get the same key in a table if and only if all their
    n_hashes integers are equal. Ids are therefore stable across calls and deterministic given
    the same seed and the same sequence of calls, but depend on the order in which points
    were first hashed. :meth:`bucket_codes` turns ids back into integer vectors.

    dtype: float32 input is projected in float32 with the directions rounded to float32 (no
    upcast of X), then b_i is added and the floor taken in float64; float64 input is done in
    float64; other real dtypes are converted to float64. The two precisions can disagree for
    points within about 1e-6·‖a_i‖‖x‖ of a bucket boundary.

    Raises:
        ValueError: for parameters outside the ranges above.

    Source: Datar et al. 2004; Baykal et al. 2022, §2.2 (Euclidean LSH model).
    """

    def __init__(self, dim: int, n_hashes: int, width: float, n_tables: int = 1, seed: int = 0):
        self.dim = check_int(dim, "dim", 1)
        self.n_hashes = check_int(n_hashes, "n_hashes", 1)
        self.width = check_real(width, "width", 0.0, low_open=True)
        self.n_tables = check_int(n_tables, "n_tables", 1)
        self.seed = check_seed(seed)
        # directions in float64, packed again in float64 and float32: 20 bytes an entry; and
        # a codebook object per table (about 1 KiB)
        check_array_memory({"n_tables": self.n_tables, "n_hashes": self.n_hashes, "dim": self.dim},
                           20, "the hash directions")
        check_allocation(self.n_tables, 1024, "n_tables", self.n_tables, "one codebook per table")
        rng = np.random.default_rng(self.seed)
        self.directions = rng.standard_normal((self.n_tables, self.n_hashes, self.dim))
        self.offsets = rng.uniform(0.0, self.width, (self.n_tables, self.n_hashes))
        self.directions.flags.writeable = False
        self.offsets.flags.writeable = False
        self._groups = {np.dtype(np.float64): pack_groups(self.directions, np.float64),
                        np.dtype(np.float32): pack_groups(self.directions, np.float32)}
        self._codebooks = [Codebook(self.n_hashes) for _ in range(self.n_tables)]

    def hash(self, X) -> np.ndarray:
        """Integer codes h_i(x): (N, dim) -> (N, n_tables, n_hashes) int64.

        Raises:
            ValueError: if X is not (N, dim) real-valued, has NaN/inf entries, or a code
                exceeds 2**62 in absolute value (X too large for this width).
        """
        X = as_points(X, self.dim)
        return self._codes(X)

    def bucket_ids(self, X, add: bool = True) -> np.ndarray:
        """Exact bucket keys: (N, dim) -> (N, n_tables) int64 (see the class docstring).

        Arguments:
            X: (N, dim) points.
            add: if True (default), integer vectors not seen before get new ids; if False
                they get -1 and the codebooks are left unchanged (a pure lookup).

        The points are processed in chunks of 16384, so the scratch memory is
        16384·n_tables·n_hashes int64 plus the codebooks' growth.

        Raises:
            ValueError: as :meth:`hash`, or ``add`` not a bool (the string 'False' is refused,
                not read as true); the codebooks are then left as they were.
        """
        add = check_bool(add, "add")
        X = as_points(X, self.dim)
        out = np.empty((len(X), self.n_tables), np.int64)
        before = [book.n_ids for book in self._codebooks]
        try:
            for start in range(0, len(X), CHUNK):
                codes = self._codes(X[start:start + CHUNK])
                for t, book in enumerate(self._codebooks):
                    out[start:start + CHUNK, t] = book.ids(codes[:, t], add=add)
        except ValueError:  # all or nothing: forget the buckets added by earlier chunks
            for book, n_ids in zip(self._codebooks, before):
                book.truncate(n_ids)
            raise
        return out

    def bucket_codes(self, keys, table: int = 0) -> np.ndarray:
        """Integer vectors of bucket keys: (n,) int -> (n, n_hashes) int64.

        Raises:
            ValueError: if ``table`` is outside 0..n_tables-1 or a key is not an id that
                :meth:`bucket_ids` has assigned in that table.
        """
        table = check_int(table, "table", 0, self.n_tables - 1)
        keys = np.asarray(keys)
        if keys.ndim != 1 or not (np.issubdtype(keys.dtype, np.integer) or keys.size == 0):
            raise ValueError(f"keys must be a 1-D integer array, got shape {keys.shape} "
                             f"and dtype {keys.dtype}")
        book = self._codebooks[table]
        keys = keys.astype(np.int64)
        unknown = (keys < 0) | (keys >= book.n_ids)
        if unknown.any():
            raise ValueError(f"keys must be bucket ids of table {table} in [0, {book.n_ids - 1}]"
                             f"; got unknown key {int(keys[unknown][0])}")
        return book.codes(keys)

    def n_buckets_seen(self, table: int = 0) -> int:
        """Number of distinct buckets (ids) assigned so far in ``table``."""
        table = check_int(table, "table", 0, self.n_tables - 1)
        return self._codebooks[table].n_ids

    @property
    def codebook_nbytes(self) -> int:
        """Bytes held by the codebooks of all tables (grows with the buckets seen)."""
        return sum(book.nbytes for book in self._codebooks)

    def to_torch(self):
        """A :class:`routing.torch_twins.TorchEuclideanLSH` with the same parameters."""
        from .torch_twins import TorchEuclideanLSH

        return TorchEuclideanLSH.from_hasher(self)

    def _codes(self, X: np.ndarray) -> np.ndarray:
        codes = np.empty((len(X), self.n_tables, self.n_hashes), np.int64)
        if len(X) and not floor_codes(X, self._groups[X.dtype], self.offsets, self.width, codes):
            raise_non_finite(X, self.dim, f"a code (a·x + b)/width exceeds 2**62 in absolute "
                                          f"value for width={self.width:g}, or a·x overflows")
        return codes

    def __repr__(self) -> str:
        return (f"EuclideanLSH(dim={self.dim}, n_hashes={self.n_hashes}, width={self.width:g}, "
                f"n_tables={self.n_tables}, seed={self.seed})")
