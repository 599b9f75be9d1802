"""Affine hyperplane LSH: sign patterns of random hyperplanes with offsets, sign(a·x + b).

Charikar's hyperplanes (``routing.HyperplaneLSH``) all pass through the origin, so their
buckets are cones: points along a ray from the origin share every bucket, however far apart
they are. With an offset b each hyperplane may cut anywhere, and the buckets of m hyperplanes
are bounded convex cells that shrink as m grows (a random hyperplane tessellation), which is
what a bucket-constant model of a Lipschitz function needs (Baykal et al. 2022, §2.2: the LSH
model of sign patterns, here with affine hash functions h(x) = sign(a·x + b)).
"""

from __future__ import annotations

import numpy as np

from routing.validation import check_array_memory, check_int, check_real, check_seed

from ._inputs import as_points, raise_non_finite
from ._projection import pack_groups
from ._sign_kernel import packed_signs
from .hyperplane_lsh import key_bits

__all__ = ["AffineHyperplaneLSH"]


class AffineHyperplaneLSH:
    """Sign patterns of ``n_bits`` affine hyperplanes a·x + b, in ``n_tables`` tables.

    Hyperplane i of table t passes through a random point p of the cube [−radius, radius]^dim:
    a ~ N(0, I_dim), p ~ U[−radius, radius]^dim, b = −a·p, so bit i of x is 1 iff
    a·(x − p) >= 0. For inputs uniform on that cube (the targets of Baykal et al. §5.1, with
    radius 1) every hyperplane cuts the data, its offset distributed as −a·x over the data.
    The paper does not specify offsets for its hyperplane hashes; this is our choice.

    Arguments:
        dim: input dimension d, >= 1.
        n_bits: hyperplanes per table (m in the paper), 1..64.
        n_tables: number of independent tables (s in the paper), >= 1.
        radius: half side of the cube the hyperplanes' points p are drawn from, a finite
            real > 0, in the units of X (default 1: the cube [−1, 1]^dim).
        seed: non-negative integer; the same seed gives the same hyperplanes.

    Attributes:
        directions: (n_tables, n_bits, dim) float64, i.i.d. N(0, 1), read-only.
        offsets: (n_tables, n_bits) float64, b = −a·p, read-only.
            Drawn from ``numpy.random.default_rng(seed)``: first ``directions`` with
            ``standard_normal`` (the directions of ``HyperplaneLSH`` with the same seed), then
            the points p (n_tables, n_bits, dim) with ``uniform(−radius, radius)``.

    Keys are packed as ``HyperplaneLSH``'s: bit i of the key is 1 iff
    directions[t, i]·x + offsets[t, i] >= 0 (zero counts as positive), key = Σ_i bit_i·2^i
    (int64; with n_bits = 64 the uint64 pattern viewed as int64). The projection is that of the
    augmented point [x, 1] on [a, b], in X's dtype (float32 input: directions and offsets
    rounded to float32; other real dtypes become float64).

    Raises:
        ValueError: for parameters outside the ranges above.

    Source: Baykal et al. 2022, §2.2 (sign-pattern LSH model); Charikar 2002 (hyperplane
    hashing, here with offsets).
    """

    def __init__(self, dim: int, n_bits: int, n_tables: int = 1, radius: float = 1.0,
                 seed: int = 0):
        self.dim = check_int(dim, "dim", 1)
        self.n_bits = check_int(n_bits, "n_bits", 1, 64)
        self.n_tables = check_int(n_tables, "n_tables", 1)
        self.radius = check_real(radius, "radius", 0.0, low_open=True)
        self.seed = check_seed(seed)
        # directions and points in float64, the augmented ones packed in float64 and float32
        check_array_memory({"n_tables": self.n_tables, "n_bits": self.n_bits, "dim": self.dim}, 36,
                           "the hyperplanes and their points")
        rng = np.random.default_rng(self.seed)
        self.directions = rng.standard_normal((self.n_tables, self.n_bits, self.dim))
        points = rng.uniform(-self.radius, self.radius, (self.n_tables, self.n_bits, self.dim))
        self.offsets = -np.einsum("tbd,tbd->tb", self.directions, points)
        self.directions.flags.writeable = False
        self.offsets.flags.writeable = False
        augmented = self.augmented_directions()
        self._groups = {np.dtype(np.float64): pack_groups(augmented, np.float64),
                        np.dtype(np.float32): pack_groups(augmented, np.float32)}

    def augmented_directions(self) -> np.ndarray:
        """[a, b] per hyperplane: (n_tables, n_bits, dim + 1) float64, the directions of a
        hyperplane hash through the origin of R^(dim+1) applied to [x, 1]."""
        return np.concatenate([self.directions, self.offsets[:, :, None]], axis=2)

    def bucket_ids(self, X) -> np.ndarray:
        """Packed keys of the points: (N, dim) -> (N, n_tables) int64 (see the class docstring).

        Raises:
            ValueError: if X is not (N, dim) real-valued, has NaN/inf entries, or is so large
                that a projection overflows.
        """
        X = as_points(X, self.dim)
        augmented = np.empty((len(X), self.dim + 1), X.dtype)
        augmented[:, :self.dim] = X
        augmented[:, self.dim] = 1
        out = np.empty((len(X), self.n_tables), np.int64)
        if len(X) and not packed_signs(augmented, self._groups[X.dtype], self.n_tables,
                                       self.n_bits, out):
            raise_non_finite(X, self.dim, f"a projection a·x + b overflows {X.dtype}")
        return out

    def hash(self, X) -> np.ndarray:
        """The bits of each key: (N, dim) -> (N, n_tables, n_bits) uint8 in {0, 1}.

        ``hash(X)[:, t, i]`` is bit i of ``bucket_ids(X)[:, t]``. Errors as :meth:`bucket_ids`.
        """
        return key_bits(self.bucket_ids(X), self.n_bits)

    def to_torch(self):
        """A :class:`routing.torch_twins.TorchAffineHyperplaneLSH` with the same hyperplanes."""
        from .torch_twins import TorchAffineHyperplaneLSH

        return TorchAffineHyperplaneLSH.from_hasher(self)

    def __repr__(self) -> str:
        return (f"AffineHyperplaneLSH(dim={self.dim}, n_bits={self.n_bits}, "
                f"n_tables={self.n_tables}, radius={self.radius:g}, seed={self.seed})")
