"""Cross-polytope LSH with fast pseudo-random rotations (Andoni et al. 2015; FALCONN's family)."""

from __future__ import annotations

import numpy as np

from routing.validation import check_array_memory, check_int, check_seed

from ._hadamard import TIE_TOL, cross_polytope_codes
from ._inputs import as_points, raise_non_finite

__all__ = ["CrossPolytopeLSH"]


class CrossPolytopeLSH:
    """``n_tables`` keys, each made of ``n_rotations`` cross-polytope hashes.

    A hash pads x with zeros to ``padded_dim`` = D (the next power of two >= dim), applies
    the pseudo-random rotation y = H D3 H D2 H D1 x (three rounds of random ±1 sign flips,
    each followed by an unnormalised fast Walsh–Hadamard transform, as in FALCONN) and
    returns 2·i + (y_i < 0) for the coordinate i of largest |y_i| — the closest vertex
    ±e_i of the cross-polytope; y_i = 0 counts as positive. Ties, which zero-padding makes
    structural (two coordinates of y can be the same function of x), go to the lowest i
    within a relative tolerance of the maximum (1e-4 in float32, 1e-10 in float64; see
    ``routing._hadamard``), so that rounding does not decide them. The hash is invariant to
    positive scaling of x (up to that tolerance); x and -x never collide.

    Arguments:
        dim: input dimension, >= 1.
        n_rotations: hashes per key, 1..``max_rotations(dim)`` = 63 // bits_per_hash,
            where bits_per_hash = log2(2·D).
        n_tables: number of independent tables, >= 1.
        seed: non-negative integer; the same seed gives the same rotations.

    Attributes:
        padded_dim: D.
        bits_per_hash: log2(2·D); a hash value lies in [0, 2·D).
        signs: (n_tables, n_rotations, 3, D) int8 in {-1, +1}, read-only, the diagonals of
            D1, D2, D3; drawn as ``2 * default_rng(seed).integers(0, 2, shape) - 1``.

    Keys (:meth:`bucket_ids`) pack the hash values exactly: key = Σ_r value_r ·
    2^(r · bits_per_hash), always non-negative.

    dtype: float32 input is rotated in float32, float64 in float64 (no upcast); other real
    dtypes are converted to float64. The precisions can disagree when the two largest |y_i|
    are within rounding of each other.

    Raises:
        ValueError: for parameters outside the ranges above (``n_rotations`` too large for
            the key to fit in 63 bits names the allowed maximum; dim <= 2**62), or sign
            vectors too large for this machine's memory.

    Source: Andoni, Indyk, Laarhoven, Razenshteyn & Schmidt 2015, §5 (pseudo-random
    rotations); Baykal et al. 2022, §2.2 (LSH model).
    """

    def __init__(self, dim: int, n_rotations: int, n_tables: int = 1, seed: int = 0):
        self.dim = check_int(dim, "dim", 1)
        self.padded_dim = 1 << (self.dim - 1).bit_length()
        self.bits_per_hash = self.padded_dim.bit_length()  # log2(2 * padded_dim)
        max_rotations = self.max_rotations(self.dim)
        if max_rotations == 0:
            raise ValueError(f"dim={self.dim} is too large: one hash takes "
                             f"{self.bits_per_hash} bits and a key holds 63, so dim must be "
                             f"<= 2**62")
        if isinstance(n_rotations, int) and not isinstance(n_rotations, bool) and \
                n_rotations > max_rotations:
            raise ValueError(f"n_rotations must be an integer in [1, {max_rotations}], got "
                             f"{n_rotations} (for dim={self.dim} a key packs n_rotations hashes "
                             f"of {self.bits_per_hash} bits into 63 bits)")
        self.n_rotations = check_int(n_rotations, "n_rotations", 1, max_rotations)
        self.n_tables = check_int(n_tables, "n_tables", 1)
        self.seed = check_seed(seed)
        # 3 sign vectors per rotation in int8, float64 and float32: 13 bytes an entry
        check_array_memory({"n_tables": self.n_tables, "n_rotations": self.n_rotations,
                            "dim": self.padded_dim}, 3 * 13,
                           "the random sign vectors (dim padded to a power of 2)")
        rng = np.random.default_rng(self.seed)
        shape = (self.n_tables, self.n_rotations, 3, self.padded_dim)
        self.signs = (2 * rng.integers(0, 2, shape) - 1).astype(np.int8)
        self.signs.flags.writeable = False
        self._signs = {np.dtype(np.float64): self.signs.astype(np.float64),
                       np.dtype(np.float32): self.signs.astype(np.float32)}

    @staticmethod
    def max_rotations(dim: int) -> int:
        """Largest n_rotations whose packed key fits in 63 bits for this ``dim``."""
        dim = check_int(dim, "dim", 1)
        return 63 // (1 << (dim - 1).bit_length()).bit_length()

    def hash(self, X) -> np.ndarray:
        """Hash values: (N, dim) -> (N, n_tables, n_rotations) int64 in [0, 2·padded_dim).

        Raises:
            ValueError: if X is not (N, dim) real-valued, has NaN/inf entries, or is so large
                that the rotation overflows.
        """
        X = as_points(X, self.dim)
        out = np.empty((len(X), self.n_tables, self.n_rotations), np.int64)
        if len(X) and not cross_polytope_codes(X, self._signs[X.dtype], TIE_TOL[X.dtype], out):
            raise_non_finite(X, self.dim, f"the rotated vector H D3 H D2 H D1 x overflows {X.dtype}")
        return out

    def bucket_ids(self, X) -> np.ndarray:
        """Packed keys: (N, dim) -> (N, n_tables) int64 >= 0. Errors as :meth:`hash`."""
        shifts = self.bits_per_hash * np.arange(self.n_rotations, dtype=np.int64)
        return (self.hash(X) << shifts).sum(axis=2)

    def to_torch(self):
        """A :class:`routing.torch_twins.TorchCrossPolytopeLSH` with the same rotations."""
        from .torch_twins import TorchCrossPolytopeLSH

        return TorchCrossPolytopeLSH.from_hasher(self)

    def __repr__(self) -> str:
        return (f"CrossPolytopeLSH(dim={self.dim}, n_rotations={self.n_rotations}, "
                f"n_tables={self.n_tables}, seed={self.seed})")
