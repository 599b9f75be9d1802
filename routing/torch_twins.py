"""Torch twins of the hash families and Top-K: same parameters, same buckets, any device.

Each module holds its hasher's parameters as registered buffers (float64, int8 or int64
tensors), so they move with ``.to(device)`` and survive ``state_dict``; build one with
``Hasher.to_torch()`` or ``TorchX.from_hasher(hasher)``. The forward pass follows the numpy
class exactly (same dtype rules: float32 input is projected with float32 directions, float64
with float64), so on CPU the two agree on every point that is not within rounding of a bucket
boundary; the tests check 1e-5·width (Euclidean) and 1e-5 in projection (signs).

Inputs are not copied to float64; non-finite inputs raise ValueError like the numpy classes
(this check synchronises with the device; pass ``check_finite=False`` to skip it inside
compiled or graph-captured code, at the price of garbage buckets for NaN rows).

Keep the float64 buffers in float64: ``module.float()`` or ``.half()`` would round the
directions, and float64 inputs would then hash differently from numpy (``.to(device)`` is
fine).

Source: Baykal et al. 2022, §2.2 (LSH model), §3.2 (LSH model as a DSM network).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from routing.validation import check_bool, check_int, check_real, check_tensor

from ._hadamard import TIE_TOL
from ._mixer import GOLDEN, MIX1, MIX2

__all__ = [
    "TorchEuclideanLSH",
    "TorchHyperplaneLSH",
    "TorchAffineHyperplaneLSH",
    "TorchCrossPolytopeLSH",
    "TorchUniformHash",
    "kth_largest",
    "topk_indices",
    "topk_mask",
]


def _check_points(X: torch.Tensor, dim: int | None, check_finite: bool) -> torch.Tensor:
    if not isinstance(X, torch.Tensor):
        raise ValueError(f"X must be a torch.Tensor, got {type(X).__name__}")
    if X.ndim != 2 or (dim is not None and X.shape[1] != dim):
        expected = "(N, n_inputs)" if dim is None else f"(N, {dim})"
        raise ValueError(f"X must have shape {expected}, got shape {tuple(X.shape)}")
    if X.dtype not in (torch.float32, torch.float64):
        if X.is_complex() or X.dtype == torch.bool:
            raise ValueError(f"X must be a real-valued tensor, got dtype {X.dtype}")
        X = X.to(torch.float64)
    if check_finite and not bool(torch.isfinite(X).all()):
        bad = int((~torch.isfinite(X)).sum())
        raise ValueError(f"X must be finite; it has {bad} NaN or infinite entries")
    return X


def _check_output(ok: torch.Tensor, check_finite: bool, reason: str) -> None:
    if check_finite and not bool(ok):
        raise ValueError(f"X is too large: {reason}; rescale X")


class TorchEuclideanLSH(nn.Module):
    """Torch twin of :class:`routing.EuclideanLSH`: forward(X) -> integer codes.

    Buffers: ``directions`` (n_tables, n_hashes, dim) float64, ``offsets`` (n_tables,
    n_hashes) float64, ``width`` () float64.

    forward(X): (N, dim) float32/float64 tensor -> (N, n_tables, n_hashes) int64 on X's
    device, h_i(x) = floor((a_i·x + b_i)/width) with a_i·x in X's dtype and the rest in
    float64. Bucket ids (the exact codebook) stay on the numpy side; on the device use the
    codes, e.g. ``torch.unique(codes[:, t], dim=0, return_inverse=True)`` for batch-local ids.

    Arguments:
        directions: real (n_tables, n_hashes, dim) array or tensor, finite.
        offsets: real (n_tables, n_hashes), finite, matching ``directions``.
        width: bucket width, a finite real > 0.
        check_finite: bool, check inputs and codes (see the module docstring).

    Raises:
        ValueError: at construction for parameters of mismatched shapes, non-finite entries
            or a bad width; in forward for a wrong shape, non-finite X, or codes beyond ±2**62.

    Source: Datar et al. 2004; Baykal et al. 2022, §2.2.
    """

    def __init__(self, directions: torch.Tensor, offsets: torch.Tensor, width: float,
                 check_finite: bool = True):
        super().__init__()
        directions = check_tensor(directions, "directions", (None, None, None),
                                  dtype=torch.float64, allow_bool=False)
        offsets = check_tensor(offsets, "offsets", tuple(directions.shape[:2]),
                               dtype=torch.float64, allow_bool=False)
        self.register_buffer("directions", directions)
        self.register_buffer("offsets", offsets)
        self.register_buffer("width", torch.tensor(check_real(width, "width", 0.0,
                                                              low_open=True), dtype=torch.float64))
        self.check_finite = check_bool(check_finite, "check_finite")

    @classmethod
    def from_hasher(cls, hasher) -> "TorchEuclideanLSH":
        """The twin of a ``routing.EuclideanLSH`` (its parameters copied to CPU buffers)."""
        return cls(torch.from_numpy(hasher.directions.copy()),
                   torch.from_numpy(hasher.offsets.copy()), hasher.width)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        n_tables, n_hashes, dim = self.directions.shape
        X = _check_points(X, dim, self.check_finite)
        A = self.directions.reshape(-1, dim).to(X.dtype)
        proj = (X @ A.T).to(torch.float64).reshape(-1, n_tables, n_hashes)  # (N, T, H)
        q = (proj + self.offsets) / self.width
        _check_output((q.abs() < 2.0**62).all(), self.check_finite,
                      "a code (a·x + b)/width exceeds 2**62 in absolute value")
        return torch.floor(q).to(torch.int64)


class TorchHyperplaneLSH(nn.Module):
    """Torch twin of :class:`routing.HyperplaneLSH`: forward(X) -> packed int64 keys.

    Buffer: ``directions`` (n_tables, n_bits, dim) float64.

    forward(X): (N, dim) float32/float64 -> (N, n_tables) int64 on X's device, bit i set iff
    directions[t, i]·x >= 0 (projection in X's dtype), identical packing to the numpy keys
    (n_bits = 64 gives the uint64 pattern as int64).

    Source: Charikar 2002; Baykal et al. 2022, §2.2.
    """

    def __init__(self, directions: torch.Tensor, check_finite: bool = True):
        super().__init__()
        self.register_buffer("directions", check_tensor(
            directions, "directions", (None, None, None), dtype=torch.float64, allow_bool=False))
        n_bits = self.directions.shape[1]
        check_int(n_bits, "n_bits", 1, 64)
        # 1 << 63 wraps to the int64 minimum, which is the intended bit pattern
        self.register_buffer("powers", torch.ones(n_bits, dtype=torch.int64)
                             << torch.arange(n_bits, dtype=torch.int64))
        self.check_finite = check_bool(check_finite, "check_finite")

    @classmethod
    def from_hasher(cls, hasher) -> "TorchHyperplaneLSH":
        """The twin of a ``routing.HyperplaneLSH`` (its parameters copied to CPU buffers)."""
        return cls(torch.from_numpy(hasher.directions.copy()))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        n_tables, n_bits, dim = self.directions.shape
        X = _check_points(X, dim, self.check_finite)
        A = self.directions.reshape(-1, dim).to(X.dtype)
        proj = (X @ A.T).reshape(-1, n_tables, n_bits)  # (N, T, B)
        _check_output(torch.isfinite(proj).all(), self.check_finite,
                      f"a projection a·x overflows {X.dtype}")
        bits = (proj >= 0).to(torch.int64)
        return (bits * self.powers).sum(dim=2)  # distinct powers: the sum is a bitwise or


class TorchAffineHyperplaneLSH(TorchHyperplaneLSH):
    """Torch twin of :class:`routing.AffineHyperplaneLSH`: forward(X) -> packed int64 keys.

    Buffers: ``directions`` (n_tables, n_bits, dim + 1) float64, the augmented directions
    [a, b] (``AffineHyperplaneLSH.augmented_directions``), and ``powers``.

    forward(X): (N, dim) float32/float64 -> (N, n_tables) int64 on X's device: the keys of
    ``TorchHyperplaneLSH`` on [x, 1], bit i set iff a_i·x + b_i >= 0 (projection in X's dtype).

    Source: Baykal et al. 2022, §2.2; Charikar 2002 (with offsets).
    """

    @classmethod
    def from_hasher(cls, hasher) -> "TorchAffineHyperplaneLSH":
        """The twin of a ``routing.AffineHyperplaneLSH`` (its hyperplanes copied to CPU
        buffers)."""
        return cls(torch.from_numpy(hasher.augmented_directions()))

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        dim = self.directions.shape[2] - 1
        X = _check_points(X, dim, self.check_finite)
        return super().forward(torch.cat([X, X.new_ones(X.shape[0], 1)], dim=1))


class TorchCrossPolytopeLSH(nn.Module):
    """Torch twin of :class:`routing.CrossPolytopeLSH`.

    Buffers: ``signs`` (n_tables, n_rotations, 3, D) int8, ``shifts`` (n_rotations,) int64.

    ``codes(X)``: (N, dim) -> (N, n_tables, n_rotations) int64 hash values in [0, 2·D);
    forward(X): -> (N, n_tables) packed int64 keys, identical to the numpy keys (same
    tie rule: lowest index within ``TIE_TOL`` of the largest |y_i|). The fast Walsh–Hadamard
    butterflies run in the same order as the Numba kernel, so on CPU the rotated vectors
    agree bit for bit.

    Source: Andoni et al. 2015, §5; Baykal et al. 2022, §2.2.
    """

    def __init__(self, signs: torch.Tensor, dim: int, check_finite: bool = True):
        super().__init__()
        signs = check_tensor(signs, "signs", (None, None, 3, None), allow_bool=False)
        size = signs.shape[3]
        if size < 1 or size & (size - 1) or not bool(((signs == 1) | (signs == -1)).all()):
            raise ValueError(f"signs must hold ±1 entries with a power-of-two last axis, got "
                             f"shape {tuple(signs.shape)}")
        self.register_buffer("signs", signs.to(torch.int8))
        n_rotations = self.signs.shape[1]
        self.dim = check_int(dim, "dim", 1, size)
        bits = size.bit_length()
        self.register_buffer("shifts", bits * torch.arange(n_rotations, dtype=torch.int64))
        self.check_finite = check_bool(check_finite, "check_finite")

    @classmethod
    def from_hasher(cls, hasher) -> "TorchCrossPolytopeLSH":
        """The twin of a ``routing.CrossPolytopeLSH`` (its parameters copied to CPU buffers)."""
        return cls(torch.from_numpy(hasher.signs.copy()), hasher.dim)

    def codes(self, X: torch.Tensor) -> torch.Tensor:
        n_tables, n_rot, _, size = self.signs.shape
        X = _check_points(X, self.dim, self.check_finite)
        n = X.shape[0]
        y = X.new_zeros(n, n_tables, n_rot, size)
        y[..., : self.dim] = X[:, None, None, :]
        signs = self.signs.to(X.dtype)
        for k in range(3):
            y = _fwht(y * signs[:, :, k])
        _check_output(torch.isfinite(y).all(), self.check_finite,
                      f"the rotated vector H D3 H D2 H D1 x overflows {X.dtype}")
        magnitude = y.abs()
        tol = TIE_TOL[torch.empty((), dtype=X.dtype).numpy().dtype]
        near_top = magnitude >= (1 - tol) * magnitude.amax(dim=-1, keepdim=True)
        best = near_top.to(torch.uint8).argmax(dim=-1)  # lowest index within the tolerance
        negative = torch.gather(y, -1, best[..., None])[..., 0] < 0
        return 2 * best + negative.to(torch.int64)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        return (self.codes(X) << self.shifts).sum(dim=2)


def _fwht(y: torch.Tensor) -> torch.Tensor:
    """Unnormalised Walsh–Hadamard transform over the last axis, butterflies h = 1, 2, 4, ..."""
    size = y.shape[-1]
    lead = y.shape[:-1]
    h = 1
    while h < size:
        z = y.reshape(*lead, size // (2 * h), 2, h)
        a, b = z[..., 0, :], z[..., 1, :]
        y = torch.stack((a + b, a - b), dim=-2).reshape(*lead, size)
        h *= 2
    return y


def as_int64(u: int) -> int:
    """A uint64 constant as the int64 with the same bit pattern."""
    return u - (1 << 64) if u >= 1 << 63 else u


def shift_right_logical(z: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 tensors holding uint64 bit patterns."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def splitmix64(z: torch.Tensor) -> torch.Tensor:
    """The splitmix64 finaliser (Steele et al. 2014) on int64 tensors holding uint64 bits.

    Arguments:
        z: int64 tensor of any shape, on any device.

    Returns:
        int64 tensor of the same shape: the uint64 result's bit pattern.
    """
    # int64 arithmetic wraps modulo 2**64 on CPU and CUDA, matching uint64 in the kernel
    z = z + as_int64(GOLDEN)
    z = (z ^ shift_right_logical(z, 30)) * as_int64(MIX1)
    z = (z ^ shift_right_logical(z, 27)) * as_int64(MIX2)
    return z ^ shift_right_logical(z, 31)


class TorchUniformHash(nn.Module):
    """Torch twin of :class:`routing.UniformHash`: forward(X) -> (N, 1) int64 buckets.

    Buffers: ``key`` () int64 (the uint64 key's bit pattern), ``n_buckets`` () int64.
    Same hash as the Numba kernel (splitmix64 over the float64 bit patterns of each row),
    emulating uint64 arithmetic with wrapping int64 operations.

    Source: Roller et al. 2021; Baykal et al. 2022, §5 Figure 4 baseline.
    """

    def __init__(self, key: int, n_buckets: int, dim: int | None = None,
                 check_finite: bool = True):
        super().__init__()
        self.register_buffer("key", torch.tensor(as_int64(int(key)), dtype=torch.int64))
        self.register_buffer("n_buckets", torch.tensor(
            check_int(n_buckets, "n_buckets", 1, 2**63 - 1), dtype=torch.int64))
        self.dim = dim
        self.check_finite = check_bool(check_finite, "check_finite")

    @classmethod
    def from_hasher(cls, hasher) -> "TorchUniformHash":
        """The twin of a ``routing.UniformHash`` (its parameters copied to CPU buffers)."""
        return cls(hasher.key, hasher.n_buckets, hasher.dim)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        X = _check_points(X, self.dim, self.check_finite)
        bits = (X.to(torch.float64) + 0.0).view(torch.int64)  # (N, n_cols)
        h = splitmix64(self.key ^ bits.shape[1]).expand(bits.shape[0]).clone()
        for j in range(bits.shape[1]):
            h = splitmix64(h ^ bits[:, j])
        return (shift_right_logical(h, 1) % self.n_buckets)[:, None]


def topk_indices(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Torch twin of :func:`routing.topk_indices`: (N, n_units) -> (N, k) int64 on the device.

    Winners by decreasing score, equal scores in increasing index order (a stable
    descending sort), so the result equals the numpy function's.

    Raises:
        ValueError: if ``scores`` is not 2-D, contains NaN (checked on the device), or ``k``
            is outside 1..n_units.
    """
    k = _check_scores(scores, k)
    return torch.sort(scores, dim=1, descending=True, stable=True).indices[:, :k]


def topk_mask(scores: torch.Tensor, k: int) -> torch.Tensor:
    """Torch twin of :func:`routing.topk_mask`: exactly k True per row, ties by lowest index.

    O(n_units) per row: the k-th largest value v (``kth_largest``), then all scores > v plus
    the first (k - #greater) scores equal to v.

    Raises:
        ValueError: as :func:`topk_indices`.
    """
    k = _check_scores(scores, k)
    kth = kth_largest(scores, k)  # (N, 1)
    mask = scores >= kth  # the answer when no tie straddles v (k scores ≥ v in every row)
    if bool((mask.sum(dim=1) == k).all()):
        return mask
    greater = scores > kth
    equal = scores == kth
    need = k - greater.sum(dim=1, keepdim=True)
    return greater | (equal & (torch.cumsum(equal, dim=1) <= need))


#: dtypes whose k-th largest value ``kth_largest`` takes from ``numpy.partition`` on CPU
_PARTITION_DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64)


def kth_largest(scores: torch.Tensor, k: int) -> torch.Tensor:
    """The k-th largest value of each row: (N, n_units) -> (N, 1), same dtype and device, no
    gradient (a selection; the caller compares scores with it).

    On CPU (float32/64, int32/64) the value comes from ``numpy.partition`` (introselect),
    5–7x faster than ``torch.topk`` with one thread on the routers' shapes (B = 256,
    N = 256…4096, k = N/4: 0.46 against 3.7 ms at N = 1024); elsewhere from ``torch.topk``.
    A selection returns one of the row's own values, so the two agree exactly on rows
    without NaN (NaN counts as the largest value in both). Shapes and k are checked here;
    NaN is the caller's to reject (``topk_mask`` does).

    Arguments:
        scores: (N, n_units) real tensor, N ≥ 0 (NaN is not rejected here: ``topk_mask``
            rejects it). k: 1..n_units.

    Raises:
        ValueError: ``scores`` not a 2-D real tensor, or ``k`` outside 1..n_units.

    Source: the k-winners-take-all of ``routing.topk`` (Baykal et al. 2022, §2.1's Top-K).
    """
    if not isinstance(scores, torch.Tensor) or scores.ndim != 2 or scores.is_complex() \
            or scores.dtype == torch.bool:
        raise ValueError(f"scores must be a 2-D real torch.Tensor (N, n_units), got "
                         f"{type(scores).__name__} {tuple(getattr(scores, 'shape', ()))}")
    k = check_int(k, "k", 1, scores.shape[1])
    scores = scores.detach()
    if scores.device.type == "cpu" and scores.dtype in _PARTITION_DTYPES and len(scores):
        n = scores.shape[1]
        part = np.partition(scores.numpy(), n - k, axis=1)  # (N, n_units), a copy
        return torch.from_numpy(np.ascontiguousarray(part[:, n - k:n - k + 1]))
    # sorted top-k's last value: the min of an unsorted top-k would be NaN when NaN is in it
    return torch.topk(scores, k, dim=1).values[:, -1:]


def _check_scores(scores, k: int) -> int:
    if not isinstance(scores, torch.Tensor):
        raise ValueError(f"scores must be a torch.Tensor, got {type(scores).__name__}")
    if scores.ndim != 2:
        raise ValueError(f"scores must have shape (N, n_units), got shape {tuple(scores.shape)}")
    if scores.is_complex() or scores.dtype == torch.bool:
        raise ValueError(f"scores must be a real-valued tensor, got dtype {scores.dtype}")
    k = check_int(k, "k", 1, scores.shape[1])
    if scores.is_floating_point() and bool(torch.isnan(scores).any()):
        raise ValueError(f"scores must not contain NaN; it has "
                         f"{int(torch.isnan(scores).sum())} NaN entries")
    return k
