"""``LSHModel``: the LSH(d, s, m, Δ) model, a trainable value per hash bucket (Baykal et al. 2022, §2.2)."""

from __future__ import annotations

import torch
from torch import nn

from routing.validation import check_choice, check_finite_tensor, check_int, check_real, check_seed
from routing.affine_hyperplane_lsh import AffineHyperplaneLSH
from routing.euclidean_lsh import EuclideanLSH
from routing.hyperplane_lsh import HyperplaneLSH
from routing.uniform_hash import UniformHash
from routing._mixer import GOLDEN
from routing.lsh_table import n_polynomial_features, polynomial_powers
from routing.torch_twins import as_int64, shift_right_logical, splitmix64

from ._base import Features, RegressionModel, _scalar

__all__ = ["LSHModel", "MAX_TABLE_VALUES", "HASH_FAMILIES", "lsh_hasher"]

#: The hash families of the bucket model (``lsh_hasher``): "sign" (Charikar's hyperplanes
#: through the origin, ``HyperplaneLSH``), "affine" (hyperplanes with offsets,
#: ``AffineHyperplaneLSH``), "euclidean" (Datar et al.'s p-stable LSH with offsets
#: b ~ U[0, w], ``EuclideanLSH``: the family of Baykal et al.'s Theorem 4.1) and "uniform" (a
#: uniform random hash of the input's values, ``UniformHash``, blind to geometry: the baseline
#: of §1 and Fig. 4).
HASH_FAMILIES = ("sign", "affine", "euclidean", "uniform")
# Integer operations of one splitmix64 round (1 add, 3 shifts, 3 xors, 2 multiplies) plus the
# xor that absorbs the input value (as ``RandomHashModel``).
_SPLITMIX_OPS = 10

# The bucket table holds n_tables · 2^n_bits · P values (P = polynomial features per bucket).
# 2^27 float32 values are 512 MiB; training with Adam adds the gradient and two moments, 2 GiB.
MAX_TABLE_VALUES = 2**27
MAX_POLY_FEATURES = 1024


def fold_codes(codes: torch.Tensor, n_bits: int) -> torch.Tensor:
    """Integer code vectors (N, T, H) -> slots (N, T) in [0, 2^n_bits) by a splitmix64 chain.

    Equal code vectors get equal slots; distinct ones collide with probability 2^-n_bits.
    """
    h = torch.full(codes.shape[:2], as_int64(GOLDEN), dtype=torch.int64, device=codes.device)
    for i in range(codes.shape[2]):
        h = splitmix64(h ^ codes[:, :, i])
    return shift_right_logical(h, 1) & ((1 << n_bits) - 1)


def lsh_hasher(family: str, dim: int, n_bits: int, n_tables: int = 1, seed: int = 0, *,
               n_hashes: int | None = None, bucket_width: float | None = None):
    """The hasher of an ``LSHModel`` of hash family ``family`` (one of ``HASH_FAMILIES``).

    Arguments:
        family: "sign" → ``HyperplaneLSH(dim, n_bits, n_tables, seed)`` (the default hasher of
            ``LSHModel``); "affine" → ``AffineHyperplaneLSH(dim, n_bits, n_tables, radius=1,
            seed)`` (hyperplanes through uniform points of [−1, 1]^dim); "euclidean" →
            ``EuclideanLSH(dim, n_hashes, bucket_width, n_tables, seed)`` (its code vectors are
            folded into the model's 2^n_bits slots per table); "uniform" →
            ``UniformHash(2^n_bits, seed, dim)`` (one table only).
        dim: input dimension, >= 1.
        n_bits: hyperplanes per table (sign, affine; 1..62), or log2 of the slots per table
            (euclidean, uniform; 1..62).
        n_tables: tables s, >= 1 (uniform: exactly 1).
        seed: the hasher's seed, >= 0.
        n_hashes: Euclidean hashes per table (euclidean only, required, >= 1).
        bucket_width: Euclidean bucket width w > 0, in the units of x (euclidean only,
            required).

    Returns:
        a routing hasher that ``LSHModel(dim, n_bits, hasher=...)`` accepts.

    Raises:
        ValueError: an unknown family, a parameter outside its range, n_hashes or
            bucket_width missing for "euclidean" or given for another family, or n_tables > 1
            for "uniform".

    Source: Baykal et al. 2022, §2.2 (sign-pattern and Euclidean LSH models), §1 and §5
    (uniform random hashing as the baseline LSH should beat).
    """
    family = check_choice(family, "family", HASH_FAMILIES)
    n_bits = check_int(n_bits, "n_bits", 1, 62)
    n_tables = check_int(n_tables, "n_tables", 1)
    euclidean = family == "euclidean"
    for name, value in (("n_hashes", n_hashes), ("bucket_width", bucket_width)):
        if euclidean and value is None:
            raise ValueError(f"{name} is required for the euclidean family")
        if not euclidean and value is not None:
            raise ValueError(f"{name} is a parameter of the euclidean family only, got "
                             f"{name}={value!r} for family {family!r}")
    if family == "sign":
        return HyperplaneLSH(dim, n_bits, n_tables, seed=seed)
    if family == "affine":
        return AffineHyperplaneLSH(dim, n_bits, n_tables, radius=1.0, seed=seed)
    if euclidean:
        return EuclideanLSH(dim, check_int(n_hashes, "n_hashes", 1),
                            check_real(bucket_width, "bucket_width", 0.0, low_open=True),
                            n_tables=n_tables, seed=seed)
    if n_tables != 1:
        raise ValueError(f"n_tables must be 1 for the uniform family (UniformHash has one "
                         f"table), got {n_tables}")
    return UniformHash(2**n_bits, seed=seed, dim=dim)


class LSHModel(RegressionModel):
    """g(x) = (1/s) Σ_{i=1..s} ĝ^i_{z^i(x)}(x): one trainable value (Δ = 0) or polynomial per bucket.

    The LSH(d, s, m, Δ) model of Baykal et al. 2022, §2.2 with α_i = 1/s: s = ``n_tables``
    independent tables of m = ``n_bits`` hyperplane hashes split R^dim into 2^m buckets each
    (frozen, "non-trainable hyperplane coefficients for hashing", §5.1); each bucket stores a
    trainable degree-Δ polynomial ĝ (Δ = 0: a scalar, the paper's experiments). The model is
    the DSM of §3.2 with width s·2^m and sparsity s. All values start at 0, so a bucket no
    training point reaches predicts 0 until ``shift_output`` moves it (``fit_model`` does, to
    the training targets' mean). Other hash families (``lsh_hasher``): affine hyperplanes,
    Euclidean LSH, and a uniform random hash as the geometry-blind baseline.

    Arguments:
        dim: input dimension, >= 1.
        n_bits: hash bits per table (buckets per table: 2^n_bits). Required unless ``hasher``
            is a ``HyperplaneLSH`` or ``AffineHyperplaneLSH`` (then it defaults to, and must
            equal, hasher.n_bits).
        hasher: optional ``routing.HyperplaneLSH`` or ``routing.AffineHyperplaneLSH`` (keys
            are the bucket indices), ``routing.EuclideanLSH`` (its integer code vectors are
            folded into 2^n_bits slots per table by a splitmix64 hash: distinct buckets share
            a slot with probability 2^-n_bits), or ``routing.UniformHash`` with
            n_buckets = 2^n_bits (one table; its bucket is the slot). Default:
            ``HyperplaneLSH(dim, n_bits, n_tables, seed)``.
        n_tables: s, >= 1 (must equal hasher.n_tables when a hasher is given).
        degree: Δ >= 0, the degree of the polynomial in each bucket (monomials in the order of
            ``routing.lsh_table.polynomial_powers``; at most 1024 of them).
        seed: seed of the default hasher.

    Parameter: ``values`` (n_tables, 2^n_bits, P), P = C(dim + Δ, Δ) monomials, zero-initialised.
    The table is refused (ValueError naming n_bits) beyond MAX_TABLE_VALUES = 2^27 values
    (512 MiB in float32, 2 GiB while training with Adam), estimated before allocating.

    Costs per example: ``flops_paper`` = 2·(dim + 1)·s. ``flops_true`` = s·2·D·H (the
    projections, H = hashes per table: n_bits for hyperplanes, n_hashes for Euclidean; D = dim,
    dim + 1 for affine hyperplanes, whose offset is one more multiply-add) + s (the average of
    s looked-up values); for the uniform hash 10·(dim + 1) + 2 integer operations (as
    ``RandomHashModel``'s hash) + 1 instead of the projections and the average; for Δ > 0 add
    max(P − 1 − dim, 0) multiplications for the monomials and s·(2P − 1) for the per-table
    dot products.

    Raises:
        ValueError: for arguments outside the ranges above or a table that is too large.
    """

    name = "lsh"

    def __init__(self, dim: int, n_bits: int | None = None, hasher=None, n_tables: int = 1,
                 degree: int = 0, seed: int = 0):
        super().__init__()
        self.dim = check_int(dim, "dim", 1)
        self.degree = check_int(degree, "degree", 0)
        self.seed = check_seed(seed)
        n_tables = check_int(n_tables, "n_tables", 1)
        if hasher is None:
            if n_bits is None:
                raise ValueError("n_bits is required when no hasher is given")
            n_bits = check_int(n_bits, "n_bits", 1, 62)
        elif isinstance(hasher, (HyperplaneLSH, AffineHyperplaneLSH, EuclideanLSH,
                                 UniformHash)):
            if hasher.dim != self.dim:
                raise ValueError(f"hasher.dim must equal dim={self.dim}, got {hasher.dim}")
            if n_tables not in (1, hasher.n_tables):
                raise ValueError(f"n_tables must equal hasher.n_tables={hasher.n_tables}, "
                                 f"got {n_tables}")
            n_tables = hasher.n_tables
            if isinstance(hasher, (HyperplaneLSH, AffineHyperplaneLSH)):
                if n_bits is not None and n_bits != hasher.n_bits:
                    raise ValueError(f"n_bits must equal hasher.n_bits={hasher.n_bits}, "
                                     f"got {n_bits}")
                n_bits = check_int(hasher.n_bits, "n_bits", 1, 62)
            elif n_bits is None:
                raise ValueError(f"n_bits (the table size 2^n_bits per table) is required "
                                 f"with a {type(hasher).__name__} hasher")
            else:
                n_bits = check_int(n_bits, "n_bits", 1, 62)
            if isinstance(hasher, UniformHash) and hasher.n_buckets != 2**n_bits:
                raise ValueError(f"n_bits must give the UniformHash's n_buckets = 2^n_bits, "
                                 f"got n_bits={n_bits} and n_buckets={hasher.n_buckets}")
        else:
            raise ValueError(f"hasher must be a routing HyperplaneLSH, AffineHyperplaneLSH, "
                             f"EuclideanLSH or UniformHash, got {type(hasher).__name__}")
        self.n_bits, self.n_tables = n_bits, n_tables
        self.n_features = n_polynomial_features(self.dim, self.degree, MAX_POLY_FEATURES)
        if self.n_features > MAX_POLY_FEATURES:
            raise ValueError(f"degree={self.degree} with dim={self.dim} gives more than "
                             f"{MAX_POLY_FEATURES} monomials per bucket; at most "
                             f"{MAX_POLY_FEATURES}")
        n_values = self.n_tables * 2**self.n_bits * self.n_features
        if n_values > MAX_TABLE_VALUES:
            raise ValueError(
                f"n_bits={self.n_bits} is too large: n_tables·2^n_bits·P = {self.n_tables}·"
                f"2^{self.n_bits}·{self.n_features} = {n_values} table values "
                f"({4 * n_values / 2**30:.3g} GiB in float32); at most 2^27 = {MAX_TABLE_VALUES}")
        if hasher is None:
            hasher = HyperplaneLSH(self.dim, self.n_bits, self.n_tables, seed=self.seed)
        self._folds = isinstance(hasher, EuclideanLSH)
        self._uniform = isinstance(hasher, UniformHash)
        self.n_hashes = 0 if self._uniform else int(hasher.directions.shape[1])
        self._projection_dim = self.dim + isinstance(hasher, AffineHyperplaneLSH)
        self.hasher_name = type(hasher).__name__
        self.hasher = hasher.to_torch()
        if self.degree:
            self.register_buffer("powers", torch.from_numpy(
                polynomial_powers(self.dim, self.degree)))  # (P, dim)
        self.values = nn.Parameter(torch.zeros(self.n_tables, 2**self.n_bits, self.n_features))

    def slots(self, X: torch.Tensor) -> torch.Tensor:
        """Bucket index of each input in each table: (N, n_tables) int64 in [0, 2^n_bits)."""
        keys = self.hasher(X)
        return fold_codes(keys, self.n_bits) if self._folds else keys

    @torch.no_grad()
    def n_nonempty(self, X, batch_size: int = 65536) -> int:
        """Non-empty buckets of X: the number of distinct (table, slot) pairs its points hash
        to, summed over the s tables — the bucket values a fit on X can set (the others keep
        their initial value). For Euclidean LSH, buckets folded into one slot count once.

        Arguments:
            X: (N, dim) real array or tensor (moved to the model's device and dtype).
            batch_size: rows hashed at once, >= 1.

        Returns:
            int in [0, min(N·s, s·2^n_bits)].

        Raises:
            ValueError: X not (N, dim), not real-valued or not finite; batch_size < 1.

        Source: the number of non-empty buckets T of Baykal et al. 2022, Theorem 4.1 and
        Lemma 4.2 (buckets that meet the data).
        """
        X = self.prepare(X)
        batch_size = check_int(batch_size, "batch_size", 1)
        offsets = torch.arange(self.n_tables, device=X.device) * 2**self.n_bits  # (s,)
        seen = [torch.unique(self.slots(X[lo:lo + batch_size]) + offsets)
                for lo in range(0, len(X), batch_size)]
        return int(torch.unique(torch.cat(seen)).numel()) if seen else 0

    @torch.no_grad()
    def shift_output(self, c: float) -> None:
        """Add ``c`` to every prediction, in place: to the constant coefficient of every
        bucket of every table (each table contributes its value / s, so the mean moves by c);
        buckets no training point reaches then predict c.

        Raises:
            ValueError: if ``c`` is not a finite real number, or the shifted values overflow
                the model's dtype (nothing is changed then).
        """
        shifted = self.values[:, :, 0] + _scalar(c, "c")
        check_finite_tensor(shifted, "the shifted bucket values (values + c)")
        self.values[:, :, 0] = shifted

    def monomials(self, X: torch.Tensor) -> torch.Tensor:
        """(N, P) monomials of x, ``polynomial_powers`` order (degree 0: a column of ones)."""
        if not self.degree:
            return X.new_ones(X.shape[0], 1)
        return torch.prod(X[:, None, :] ** self.powers, dim=2)  # (N, P, dim) -> (N, P)

    def features(self, X: torch.Tensor) -> Features:
        """``Features(cols (N, s·P), vals (N, s·P))``: the P coefficients of each table's
        bucket, with value monomial/s; coefficient index (t·2^n_bits + slot)·P + p."""
        n, P, s = X.shape[0], self.n_features, self.n_tables
        table = torch.arange(s, device=X.device) * 2**self.n_bits  # (s,)
        base = (self.slots(X) + table) * P  # (N, s)
        cols = (base[:, :, None] + torch.arange(P, device=X.device)).reshape(n, s * P)
        vals = (self.monomials(X) / s)[:, None, :].expand(n, s, P).reshape(n, s * P)
        return Features(cols, vals)

    def coefficient_parameter(self) -> nn.Parameter:
        return self.values

    @property
    def buckets(self) -> int:
        return self.n_tables * 2**self.n_bits

    @property
    def total_units(self) -> int:
        return self.buckets

    @property
    def activated_units(self) -> int:
        return self.n_tables

    def flops_true(self) -> int:
        s, P = self.n_tables, self.n_features
        if self._uniform:
            flops = _SPLITMIX_OPS * (self.dim + 1) + 2 + 1
        else:
            flops = s * 2 * self._projection_dim * self.n_hashes + s
        if self.degree:
            flops += max(P - 1 - self.dim, 0) + s * (2 * P - 1)
        return flops

    def _arguments(self) -> dict:
        return {"buckets": self.buckets, "n_bits": self.n_bits, "n_tables": self.n_tables,
                "degree": self.degree, "hasher": self.hasher_name, "seed": self.seed}
