"""``Dense``: a frozen random ReLU layer and a trainable linear read-out (Baykal et al. 2022, §5.1)."""

from __future__ import annotations

import torch
from torch import nn

from routing.validation import check_int, check_seed

from ._base import Features, RegressionModel, bottom_layer, check_dim_width

__all__ = ["Dense", "KSparseDense"]


class Dense(RegressionModel):
    """g(x) = A·φ(x) + a₀ with φ(x) = ReLU(Bx + c) frozen and A (1 × width), a₀ trainable.

    The dense baseline of Baykal et al. 2022, §2.1 and §5.1 ("a random-initialized,
    non-trainable bottom layer … and a trainable top layer").

    Arguments:
        dim: input dimension, >= 1.
        width: number of hidden units t, >= 1.
        seed: seed of the bottom layer (see ``bottom_layer``: B_ij ~ N(0, 1/dim),
            c_j ~ N(0, 1/3)); DSM and RandomHashModel with the same (dim, width, seed) share it.

    Buffers: ``B`` (width, dim), ``c`` (width,). Parameters: ``weight`` (1, width) and ``bias``
    (), both initialised to zero (the fit is convex in them).

    Costs per example: ``flops_paper`` = ``flops_true`` = 2·(dim + 1)·width: the bottom layer
    takes dim multiplications and dim additions (bias included) per unit, the top layer one
    multiplication and one addition per unit; the ReLU and the output bias are not counted.

    Raises:
        ValueError: if dim < 1, width < 1 or seed < 0, or the bottom layer would not fit in
            memory.
    """

    name = "dense"

    def __init__(self, dim: int, width: int, seed: int = 0):
        super().__init__()
        self.dim, self.width = check_dim_width(dim, width)
        self.seed = check_seed(seed)
        B, c = bottom_layer(self.dim, self.width, self.seed)
        self.register_buffer("B", torch.tensor(B, dtype=torch.float32))  # (width, dim)
        self.register_buffer("c", torch.tensor(c, dtype=torch.float32))  # (width,)
        self.weight = nn.Parameter(torch.zeros(1, self.width))
        self.bias = nn.Parameter(torch.zeros(()))

    def features(self, X: torch.Tensor) -> Features:
        """Dense features φ(x) = ReLU(Bx + c): ``Features(None, (N, width))``."""
        return Features(None, torch.addmm(self.c, X, self.B.T).relu_())  # (N, width)

    def coefficient_parameter(self) -> nn.Parameter:
        return self.weight

    @property
    def total_units(self) -> int:
        return self.width

    @property
    def activated_units(self) -> int:
        return self.width

    def flops_true(self) -> int:
        return 2 * (self.dim + 1) * self.width

    def _arguments(self) -> dict:
        return {"width": self.width, "seed": self.seed}


class KSparseDense(Dense):
    """``Dense`` with exactly k of its width units active per input: the part DSM and
    RandomHashModel share (same bottom layer for the same (dim, width, seed), same top layer).
    Subclasses choose the k units in ``features``.

    Raises:
        ValueError: as ``Dense``, or k outside 1..width.
    """

    def __init__(self, dim: int, width: int, k: int, seed: int = 0):
        super().__init__(dim, width, seed)
        self.k = check_int(k, "k", 1, self.width)

    @torch.no_grad()
    def mask(self, X) -> torch.Tensor:
        """mask(x) of §2.1: (N, width) bool, exactly k True per row."""
        f = self.features(self.prepare(X))
        out = torch.zeros(len(f), self.width, dtype=torch.bool, device=f.vals.device)
        return out.scatter_(1, f.cols, True)

    @property
    def activated_units(self) -> int:
        return self.k
