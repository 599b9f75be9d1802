"""Hyperplane (sign-pattern) LSH: the LSH(d, s, m) model of Baykal et al. 2022, §2.2.

Charikar 2002: with a ~ N(0, I_dim), P[sign(a·x) = sign(a·y)] = 1 - θ(x, y)/π per bit.
"""

from __future__ import annotations

import numpy as np

from routing.validation import check_array_memory, check_int, check_seed

from ._inputs import as_points, raise_non_finite
from ._projection import pack_groups
from ._sign_kernel import packed_signs

__all__ = ["HyperplaneLSH", "key_bits"]


class HyperplaneLSH:
    """Sign patterns of ``n_bits`` Gaussian projections, in ``n_tables`` independent tables.

    Arguments:
        dim: input dimension d, >= 1.
        n_bits: bits per key (m in the paper), 1..64.
        n_tables: number of independent tables (s in the paper), >= 1.
        seed: non-negative integer; the same seed gives the same directions.

    Attributes:
        directions: (n_tables, n_bits, dim) float64, i.i.d. N(0, 1), read-only; drawn as
            ``numpy.random.default_rng(seed).standard_normal((n_tables, n_bits, dim))``.

    Bit i of the key of x in table t is 1 iff ``directions[t, i] · x >= 0`` (a zero
    projection counts as positive). Keys are packed little-endian into int64: key =
    Σ_i bit_i · 2^i. With ``n_bits == 64`` the key is the uint64 bit pattern viewed as int64,
    so keys with bit 63 set are negative; ``keys.view(np.uint64)`` recovers the pattern.

    dtype: float32 input is projected in float32 with the directions rounded to float32
    (no upcast of X); float64 input in float64; other real dtypes are converted to float64.
    The two precisions can disagree for points within about 1e-6·‖a‖‖x‖ of a hyperplane.

    Raises:
        ValueError: for parameters outside the ranges above.

    Source: Charikar 2002; Baykal et al. 2022, §2.2 (LSH model).
    """

    def __init__(self, dim: int, n_bits: int, n_tables: int = 1, seed: int = 0):
        self.dim = check_int(dim, "dim", 1)
        self.n_bits = check_int(n_bits, "n_bits", 1, 64)
        self.n_tables = check_int(n_tables, "n_tables", 1)
        self.seed = check_seed(seed)
        # directions in float64, packed again in float64 and float32: 20 bytes an entry
        check_array_memory({"n_tables": self.n_tables, "n_bits": self.n_bits, "dim": self.dim}, 20,
                           "the hyperplane directions")
        rng = np.random.default_rng(self.seed)
        self.directions = rng.standard_normal((self.n_tables, self.n_bits, self.dim))
        self.directions.flags.writeable = False
        self._groups = {np.dtype(np.float64): pack_groups(self.directions, np.float64),
                        np.dtype(np.float32): pack_groups(self.directions, np.float32)}

    def bucket_ids(self, X) -> np.ndarray:
        """Packed keys of the points: (N, dim) -> (N, n_tables) int64 (see the class docstring).

        Raises:
            ValueError: if X is not (N, dim) real-valued, has NaN/inf entries, or is so large
                that a projection overflows.
        """
        X = as_points(X, self.dim)
        out = np.empty((len(X), self.n_tables), np.int64)
        if len(X) and not packed_signs(X, self._groups[X.dtype], self.n_tables, self.n_bits, out):
            raise_non_finite(X, self.dim, f"a projection a·x overflows {X.dtype}")
        return out

    def hash(self, X) -> np.ndarray:
        """The bits of each key: (N, dim) -> (N, n_tables, n_bits) uint8 in {0, 1}.

        ``hash(X)[:, t, i]`` is bit i of ``bucket_ids(X)[:, t]``. Errors as :meth:`bucket_ids`.
        """
        return key_bits(self.bucket_ids(X), self.n_bits)

    def to_torch(self):
        """A :class:`routing.torch_twins.TorchHyperplaneLSH` with the same directions."""
        from .torch_twins import TorchHyperplaneLSH

        return TorchHyperplaneLSH.from_hasher(self)

    def __repr__(self) -> str:
        return (f"HyperplaneLSH(dim={self.dim}, n_bits={self.n_bits}, "
                f"n_tables={self.n_tables}, seed={self.seed})")


def key_bits(keys: np.ndarray, n_bits: int) -> np.ndarray:
    """The bits of packed sign keys: int64 (N, n_tables) -> uint8 (N, n_tables, n_bits) in
    {0, 1}, bit i of ``keys[:, t]`` at ``[:, t, i]`` (the layout ``bucket_ids`` packs; shared
    by ``HyperplaneLSH`` and ``AffineHyperplaneLSH``)."""
    keys = np.asarray(keys, np.int64).view(np.uint64)
    shifts = np.arange(n_bits, dtype=np.uint64)
    return ((keys[:, :, None] >> shifts) & np.uint64(1)).astype(np.uint8)
