"""``RandomHashModel``: k units chosen by a uniform random hash of the input (Roller et al. 2021)."""

from __future__ import annotations

import torch

from routing.uniform_hash import UniformHash

from ._base import Features
from .dense import KSparseDense

__all__ = ["RandomHashModel"]

# Integer operations of one splitmix64 round (1 add, 3 shifts, 3 xors, 2 multiplies) plus the
# xor that absorbs the input value.
_SPLITMIX_OPS = 10
_GATHER_ELEMENTS = 2**22  # weights gathered at once in ``features``


class RandomHashModel(KSparseDense):
    """Like ``DSM``, but the k active units are a block picked by a uniform hash of x.

    The width units are split into width/k consecutive blocks of k units (a Switch-style
    layer of width/k experts with k units each, Baykal et al. 2022, §3.1); input x activates
    block h(x), where h = ``routing.UniformHash(width // k, seed)`` hashes the bit patterns of
    x's coordinates, independently of geometry: nearby inputs land in unrelated blocks
    (the random-hash baseline of §5, Figure 4). Then g(x) = Σ_{j in block h(x)} A_j φ_j(x) + a₀
    with φ the bottom layer of ``Dense`` (same seed, same units).

    The hash sees x after conversion to the model's dtype (float32 by default): the same
    point hashes to the same block on every device.

    Arguments:
        dim: input dimension, >= 1.
        width: total number of hidden units, >= 1.
        k: activated units per input, 1 <= k <= width, and k must divide width.
        seed: seed of the bottom layer and of the hash.

    Costs per example: ``flops_paper`` = 2·(dim + 1)·k. ``flops_true`` = 10·(dim + 1) + 2
    (the hash: one splitmix64 round of 10 integer operations per coordinate and one for the
    row length, then a shift and a modulo) + 2·dim·k (the bottom layer of the k active units
    only) + 2·k (top layer).

    Raises:
        ValueError: if dim < 1, width < 1, k outside [1, width], k not dividing width,
            seed < 0, or the bottom layer would not fit in memory.
    """

    name = "random_hash"

    def __init__(self, dim: int, width: int, k: int, seed: int = 0):
        super().__init__(dim, width, k, seed)
        if self.width % self.k:
            raise ValueError(f"k must divide width (the units form width/k blocks of k), "
                             f"got k={self.k}, width={self.width}")
        self.n_blocks = self.width // self.k
        self.hasher = UniformHash(self.n_blocks, seed=self.seed, dim=self.dim).to_torch()

    def blocks(self, X: torch.Tensor) -> torch.Tensor:
        """The block of each input: (N,) int64 in [0, width/k)."""
        return self.hasher(X)[:, 0]

    def features(self, X: torch.Tensor) -> Features:
        """The units of block h(x): ``Features(cols (N, k) increasing, vals (N, k) = φ)``."""
        block = self.blocks(X)  # (N,)
        units = torch.arange(self.k, device=X.device)
        cols = block[:, None] * self.k + units  # (N, k)
        B = self.B.view(self.n_blocks, self.k, self.dim)
        c = self.c.view(self.n_blocks, self.k)
        rows = max(1, _GATHER_ELEMENTS // (self.k * self.dim))  # bounds the (rows, k, dim) gather
        vals = torch.cat([
            torch.baddbmm(c[block[lo:lo + rows], :, None], B[block[lo:lo + rows]],
                          X[lo:lo + rows, :, None])[:, :, 0]  # (rows, k)
            for lo in range(0, len(X), rows)]) if len(X) else X.new_zeros(0, self.k)
        return Features(cols, vals.relu_())

    def flops_true(self) -> int:
        return _SPLITMIX_OPS * (self.dim + 1) + 2 + 2 * self.dim * self.k + 2 * self.k

    def _arguments(self) -> dict:
        return {"width": self.width, "k": self.k, "seed": self.seed}
